//! Node layout, tower links with successor hints, and the comparisons a search makes.
//!
//! # Node words
//!
//! A node of height `h` whose user key has `n` bytes occupies `h + 2 + w` consecutive
//! `AtomicU64` words of one arena chunk, `w = clamp(ceil(n / 8), 1, INLINE_WORDS)`, and is
//! named by the index of its header word. The tower sits *below* the header (as in RocksDB's
//! `InlineSkipList`), so neither the key nor link `i` needs the height:
//!
//! ```text
//! id-h .. id-1             id                        id+1      id+2 .. id+1+w
//! link[h-1] .. link[0]     key_len<<32 | run         trailer   user key, 8 bytes a word
//! ```
//!
//! Key words hold the first `INLINE_BYTES` of the user key big-endian, zero-padded; call that
//! padded 64-byte string `P(k)`. `P` is monotone (`a < b` implies `P(a) <= P(b)`), so
//! `P(a) < P(b)` proves `a < b`, and only ties on `P` need the whole key and trailer.
//!
//! # Links and hints
//!
//! A link is one word, so a reader always sees its three fields together:
//!
//! ```text
//! bits 63..32: next (node id, 0 = none)  31..24: pos  23..0: hint
//! ```
//!
//! For a node `x` with successor `s`, `pos = d(x, s)` is the first byte where `P(x)` and
//! `P(s)` differ (`NO_POS` if they tie) and `hint = P(s)[pos..pos + 3]`. The head counts as
//! differing from everything at byte 0. A search at `x` also knows `dx = d(x, t)` for its
//! target `t > x`. Since `P(x)[..dx] = P(t)[..dx]` with `P(x)[dx] < P(t)[dx]`, and likewise
//! for `s` at `pos`:
//!
//! - `dx < pos`: `P(t)` exceeds `P(s)` at `dx`, so `t > s` and `d(s, t) = dx`;
//! - `dx > pos`: `P(t)[pos] = P(x)[pos] < P(s)[pos]`, so `t < s`;
//! - `dx = pos`: compare `P(t)[pos..pos + 3]` with the hint; a difference decides (and
//!   gives `d(s, t)`), a tie means reading `s`.
//!
//! So a search reads a node only to step onto it (for its tower) or on a hint tie; the
//! comparison that ends each level usually costs no memory access. With 1M random 16-byte
//! keys and p = 1/4 this cut the nodes read per insert from 31.6 to 24.6 (17.3 with p = 1/2,
//! see `list.rs`); ties stay rare even for db_bench's `%016d` keys, whose first 10 bytes are
//! all equal, because the hint sits where neighbours first differ.

use std::cmp::Ordering;
use std::sync::atomic::{AtomicU64, Ordering::Acquire, Ordering::Relaxed, Ordering::Release};

use crate::key;

/// Tallest tower. With p = 1/2, 24 levels serve 2^24 = 16M entries at full speed.
pub(crate) const MAX_HEIGHT: usize = 24;
/// User-key words kept in a node; longer keys compare their tail from the entry.
pub(crate) const INLINE_WORDS: usize = 8;
/// Bytes of `P(k)`.
pub(crate) const INLINE_BYTES: usize = INLINE_WORDS * 8;
/// Null in a link (word 0 is never a node's header).
pub(crate) const NIL: NodeId = NodeId(0);
/// The head's header: its tower fills words `0..MAX_HEIGHT`.
pub(crate) const HEAD: NodeId = NodeId(MAX_HEIGHT as u32);

/// `pos` when two keys tie on `P`.
pub(crate) const NO_POS: u8 = u8::MAX;

/// A node of one list, by the index of its header word; or [`NIL`].
///
/// The ways to get one are [`NIL`], [`HEAD`], a link's successor ([`Node::link`], every
/// link word loaded with `Acquire`; every link word written is a packed [`Link`] of ids
/// already held, through [`Node::store_link`] and [`Node::exchange_link`]) and
/// [`NodeId::reserved`], the one constructor from integers, which `SkipList::insert_from`
/// calls once with what it has just reserved. So an id in hand names NIL, the head, or a
/// node whose header and entry bytes were written before any other thread could read the
/// id (or the caller's own node): what makes borrowing a node's entry bytes sound
/// (`SkipList::entry_of`, and the proof sketch in `list.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct NodeId(u32);

impl NodeId {
    /// The header of a node whose words a writer reserved from word `start` with a tower of
    /// `height` links below the header; `None` past the `u32` range. For the writer that
    /// reserved them only (`SkipList::insert_from`): it fills the header before the id
    /// leaves its thread (through the `Release` exchange that links the node).
    pub(super) fn reserved(start: u64, height: usize) -> Option<NodeId> {
        u32::try_from(start.checked_add(height as u64)?)
            .ok()
            .map(NodeId)
    }

    /// The header word's index in the node arena.
    #[inline]
    pub(crate) fn index(self) -> u32 {
        self.0
    }
}

/// Number of key words a node stores for a user key of `len` bytes.
#[inline]
pub(crate) fn inline_words(len: usize) -> usize {
    len.div_ceil(8).clamp(1, INLINE_WORDS)
}

/// One tower link, unpacked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Link {
    /// Successor, or NIL.
    pub(crate) next: NodeId,
    /// `d(owner, next)`.
    pub(crate) pos: u8,
    /// `P(next)[pos..pos + 3]` as a 24-bit big-endian integer.
    pub(crate) hint: u32,
}

impl Link {
    #[inline]
    pub(crate) fn pack(self) -> u64 {
        (u64::from(self.next.0) << 32)
            | (u64::from(self.pos) << 24)
            | u64::from(self.hint & 0xff_ffff)
    }

    #[inline]
    fn unpack(w: u64) -> Link {
        Link {
            next: NodeId((w >> 32) as u32),
            pos: (w >> 24) as u8,
            hint: (w & 0xff_ffff) as u32,
        }
    }
}

/// Where a search goes from `x` at one level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// The target is after the successor; carries `d(successor, target)`.
    Right(u8),
    /// The target is before the successor.
    Down,
    /// The hint cannot tell; compare with the successor's key.
    Unknown,
}

/// Index of the first differing byte of two 24-bit windows that differ.
#[inline]
fn window_diff(a: u32, b: u32) -> u8 {
    (((a ^ b) << 8).leading_zeros() / 8) as u8
}

/// A search key, split and padded once so each comparison is cheap.
pub(crate) struct Target<'a> {
    pub(crate) user_key: &'a [u8],
    pub(crate) trailer: u64,
    /// `P(user_key)` plus two zero bytes, so any 3-byte window at `pos < 64` is in bounds.
    padded: [u8; INLINE_BYTES + 2],
}

impl<'a> Target<'a> {
    /// The internal key `(user_key, trailer)`.
    pub(crate) fn new(user_key: &'a [u8], trailer: u64) -> Self {
        let mut padded = [0u8; INLINE_BYTES + 2];
        let n = user_key.len().min(INLINE_BYTES);
        padded[..n].copy_from_slice(&user_key[..n]);
        Target {
            user_key,
            trailer,
            padded,
        }
    }

    /// An encoded internal key, split as [`key::compare_internal`] splits it.
    pub(crate) fn from_internal(ikey: &'a [u8]) -> Self {
        Target::new(key::user_key(ikey), key::trailer(ikey))
    }

    /// Key word `j` of `P(user_key)` (`j < INLINE_WORDS`).
    #[inline]
    pub(crate) fn word(&self, j: usize) -> u64 {
        let mut b = [0u8; 8];
        if let Some(s) = self.padded.get(j * 8..j * 8 + 8) {
            b.copy_from_slice(s);
        }
        u64::from_be_bytes(b)
    }

    /// `P(user_key)[pos..pos + 3]`.
    #[inline]
    pub(crate) fn window(&self, pos: u8) -> u32 {
        let p = usize::from(pos);
        match self.padded.get(p..p + 3) {
            Some(&[a, b, c]) => u32::from_be_bytes([0, a, b, c]),
            _ => 0,
        }
    }

    /// Decide a step from a link of a node `x < self` with `dx = d(x, self)`.
    #[inline]
    pub(crate) fn step(&self, link: Link, dx: u8) -> Step {
        let pos = link.pos;
        if pos == NO_POS || dx == NO_POS {
            return Step::Unknown;
        }
        match dx.cmp(&pos) {
            Ordering::Less => Step::Right(dx),
            Ordering::Greater => Step::Down,
            Ordering::Equal => {
                let w = self.window(pos);
                match w.cmp(&link.hint) {
                    Ordering::Less => Step::Down,
                    Ordering::Greater => Step::Right(pos + window_diff(w, link.hint)),
                    Ordering::Equal => Step::Unknown,
                }
            }
        }
    }
}

/// A borrowed view of one node: its chunk and the offset of its header.
#[derive(Clone, Copy)]
pub(crate) struct Node<'a> {
    pub(crate) chunk: &'a [AtomicU64],
    pub(crate) at: usize,
}

impl<'a> Node<'a> {
    #[inline]
    fn word(&self, i: usize) -> u64 {
        self.chunk.get(self.at + i).map_or(0, |a| a.load(Relaxed))
    }

    /// (user key length, first cell of the entry's run in the entry byte arena).
    #[inline]
    pub(crate) fn header(&self) -> (usize, u32) {
        let h = self.word(0);
        ((h >> 32) as usize, h as u32)
    }

    #[inline]
    pub(crate) fn trailer(&self) -> u64 {
        self.word(1)
    }

    /// Key word `j` of `P(key)`, given `words = inline_words(key_len)`.
    #[inline]
    fn key_word(&self, words: usize, j: usize) -> u64 {
        if j < words { self.word(2 + j) } else { 0 }
    }

    /// The slot of link `level`.
    #[inline]
    fn link_slot(&self, level: usize) -> Option<&'a AtomicU64> {
        self.chunk.get(self.at.checked_sub(level + 1)?)
    }

    /// Set link `level` of a node not yet linked on that level (`Relaxed`: the exchange
    /// that links it publishes it). Nothing when the node has no such level (never for a
    /// node of its list: `exchange_link` then stops the insert).
    #[inline]
    pub(crate) fn store_link(&self, level: usize, link: Link) {
        if let Some(slot) = self.link_slot(level) {
            slot.store(link.pack(), Relaxed);
        }
    }

    /// Replace link `level` from `old` to `new`: `Release` on success (publishes what the
    /// writer wrote before, the new node's words), `Acquire` on failure. `None` when the
    /// node has no such level, else whether it was replaced.
    #[inline]
    pub(crate) fn exchange_link(&self, level: usize, old: Link, new: Link) -> Option<bool> {
        let slot = self.link_slot(level)?;
        Some(
            slot.compare_exchange(old.pack(), new.pack(), Release, Acquire)
                .is_ok(),
        )
    }

    /// Link `level`; pairs with the writer's `Release` store.
    #[inline]
    pub(crate) fn link(&self, level: usize) -> Link {
        Link::unpack(self.link_slot(level).map_or(0, |a| a.load(Acquire)))
    }

    /// `P(key)[pos..pos + 3]`.
    pub(crate) fn window(&self, pos: u8) -> u32 {
        let words = inline_words(self.header().0);
        let p = usize::from(pos);
        let (j, shift) = (p / 8, p % 8);
        let pair =
            (u128::from(self.key_word(words, j)) << 64) | u128::from(self.key_word(words, j + 1));
        ((pair >> (104 - 8 * shift)) & 0xff_ffff) as u32
    }

    /// Order of `P(key)` against `P(t)`, and `d(self, t)` (`NO_POS` on a tie).
    #[inline]
    pub(crate) fn cmp_padded(&self, t: &Target<'_>) -> (Ordering, u8) {
        let words = inline_words(self.header().0);
        let twords = inline_words(t.user_key.len());
        for j in 0..words.max(twords) {
            let (a, b) = (self.key_word(words, j), t.word(j));
            if a != b {
                return (
                    a.cmp(&b),
                    (j * 8) as u8 + ((a ^ b).leading_zeros() / 8) as u8,
                );
            }
        }
        (Ordering::Equal, NO_POS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node_words(key: &[u8]) -> Vec<AtomicU64> {
        let t = Target::new(key, 0);
        let mut w = vec![AtomicU64::new((key.len() as u64) << 32), AtomicU64::new(0)];
        w.extend((0..inline_words(key.len())).map(|j| AtomicU64::new(t.word(j))));
        w
    }

    #[test]
    fn link_round_trip() {
        let l = Link {
            next: NodeId(0xdead_beef),
            pos: 63,
            hint: 0x12_3456,
        };
        assert_eq!(Link::unpack(l.pack()), l);
        assert_eq!(Link::unpack(0).next, NIL);
    }

    #[test]
    fn windows_and_positions_agree() {
        let keys: [&[u8]; 6] = [
            b"",
            b"a",
            b"abcdefghij",
            b"abcdefgh\x01",
            &[7u8; 70],
            b"abd",
        ];
        for a in keys {
            let words = node_words(a);
            let n = Node {
                chunk: &words,
                at: 0,
            };
            let ta = Target::new(a, 0);
            for pos in 0..64u8 {
                assert_eq!(n.window(pos), ta.window(pos), "key {a:?} pos {pos}");
            }
            for b in keys {
                let tb = Target::new(b, 0);
                let (ord, d) = n.cmp_padded(&tb);
                let pa = &ta.padded[..INLINE_BYTES];
                let pb = &tb.padded[..INLINE_BYTES];
                assert_eq!(ord, pa.cmp(pb));
                let want = pa.iter().zip(pb).position(|(x, y)| x != y);
                assert_eq!(d, want.map_or(NO_POS, |p| p as u8));
            }
        }
    }

    #[test]
    fn hint_steps_are_sound() {
        // x < s; the step from x's link must never contradict the true order of t and s.
        let keys: Vec<Vec<u8>> = (0u32..400)
            .map(|i| {
                let mut k = format!("{:05}", (i * 7919) % 1000).into_bytes();
                k.truncate(1 + (i as usize % 5));
                k
            })
            .collect();
        let d = |a: &[u8], b: &[u8]| {
            let (pa, pb) = (Target::new(a, 0), Target::new(b, 0));
            let p = pa
                .padded
                .iter()
                .zip(&pb.padded[..])
                .take(INLINE_BYTES)
                .position(|(x, y)| x != y);
            p.map_or(NO_POS, |p| p as u8)
        };
        for x in keys.iter().step_by(7) {
            for s in keys.iter().step_by(3).filter(|s| *s > x) {
                let ds = d(x, s);
                let ts = Target::new(s, 0);
                let link = Link {
                    next: NodeId(1),
                    pos: ds,
                    hint: if ds == NO_POS { 0 } else { ts.window(ds) },
                };
                for t in keys.iter().filter(|t| *t > x) {
                    let tt = Target::new(t, 0);
                    match tt.step(link, d(x, t)) {
                        Step::Right(dst) => {
                            assert!(t > s, "{x:?} {s:?} {t:?}");
                            assert_eq!(dst, d(s, t));
                        }
                        Step::Down => assert!(t < s, "{x:?} {s:?} {t:?}"),
                        Step::Unknown => {}
                    }
                }
            }
        }
    }
}
