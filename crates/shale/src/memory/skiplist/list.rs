//! The raw skiplist: one writer at a time, any number of lock-free readers, safe Rust.
//!
//! Nodes are runs of `AtomicU64` words in an append-only [`Arena`] (layout and the link
//! hints that let most comparisons skip the successor: `node.rs`). Each entry's bytes,
//! `internal key | value`, are one allocation in an entry arena slot, for `key()`/`value()`
//! and for comparing keys longer than the inline words.
//!
//! # Why readers never see a half-built node (proof sketch)
//!
//! Inserts are serialized by `writer` (a mutex), so there is one writer at a time; the
//! argument is LevelDB's.
//!
//! 1. The writer fills every word of a new node `n` (header, trailer, key, all links) and
//!    sets its entry slot and any new chunk *before* the first store that makes `n`
//!    reachable: the `Release` store of link 0 of `n`'s predecessor. Links on higher levels
//!    are published the same way, bottom-up.
//! 2. A reader learns a node index only from an `Acquire` load of a link (the head's words
//!    exist from construction). If it reads `n`, that load synchronizes with the `Release`
//!    store that wrote `n`, so everything the writer did before that store (1.) happens-
//!    before the reader's loads of `n`'s words and entry: it sees them whole.
//! 3. After publication, the only words of `n` that ever change are its links, and link `i`
//!    only from successor `s` to a new node `m` with `n < m < s` whose own link `i` is
//!    already `s`. So each level is a sorted list at every instant, and a reader following
//!    link `i` sees either `n -> s` or `n -> m -> s`, both sorted. A link word carries its
//!    hint, so a reader never pairs a successor with another node's hint.
//! 4. Bottom-up linking means a node reachable on level `i` is linked on every level below.
//!    `max_height` is `Relaxed`: a reader that sees a raised height before the head's new
//!    link reads null on that level and descends.
//! 5. Nothing is freed or moved before the list is dropped (arena chunks are append-only),
//!    and readers borrow the list, so every index a reader holds stays valid.
//!
//! # Concurrent writers
//!
//! The mutex makes racing inserts correct but serial. FloDB's drain threads, to insert in
//! parallel, would need: allocation of words and entry slots by `fetch_add` (chunks are
//! already `get_or_init`), a `compare_exchange` of each predecessor's link from the old
//! successor to the new node that, on failure, re-searches that level from the predecessor
//! (recomputing `d` and the hints) and retries, a CAS-max on `max_height`, and atomic
//! counters (RocksDB's `InlineSkipList::InsertConcurrently`).

use std::cmp::Ordering;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed, Ordering::Release};

use parking_lot::Mutex;

use super::arena::Arena;
use super::node::{
    HEAD, INLINE_BYTES, Link, MAX_HEIGHT, NIL, NO_POS, Node, Step, Target, inline_words,
};
use crate::key::{self, MAX_SEQNO, SeqNo, TRAILER_LEN, ValueKind};

/// Malloc's per-allocation overhead, charged per entry.
const ALLOC_OVERHEAD: usize = 16;

/// Node words; first chunk 2^13 words (64 KiB).
type Words = Arena<AtomicU64, 13>;
/// Entry slots; first chunk 2^10 slots (24 KiB).
type Entries = Arena<OnceLock<Box<[u8]>>, 10>;

/// A search's path: at each level, the last node before the target and `d(node, target)`.
type Splice = [(u32, u8); MAX_HEIGHT];

/// State only the writer touches; behind the mutex that serializes inserts.
struct Writer {
    /// First free word.
    next_word: u64,
    /// First free entry slot.
    next_entry: u64,
    /// xorshift64 state for tower heights.
    rng: u64,
}

impl Writer {
    fn random_height(&mut self) -> usize {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        // p = 1/2: one trailing zero bit per extra level, P(height > h) = 2^-h. With the
        // link hints a search reads a node only when it steps onto it, and descending is
        // free (the tower is in the node), so the steps to the right are the cost; 1/2
        // takes ~30% fewer of them than LevelDB's 1/4 (17 vs 25 at 1M entries).
        1 + (x.trailing_zeros() as usize).min(MAX_HEIGHT - 1)
    }
}

/// The skiplist; see the module docs.
pub(crate) struct SkipList {
    words: Words,
    entries: Entries,
    /// Height of the tallest tower linked so far (at least 1).
    max_height: AtomicUsize,
    len: AtomicUsize,
    bytes: AtomicUsize,
    writer: Mutex<Writer>,
}

impl SkipList {
    pub(crate) fn new() -> Self {
        let words = Words::new();
        words.ensure_chunk(0, || AtomicU64::new(0));
        // Charged by what entries use, not by chunk capacity: the first chunk alone is
        // 64 KiB, and a write buffer smaller than that would otherwise be "full" while empty.
        let bytes = std::mem::size_of::<Self>() + (HEAD as usize + 3) * 8;
        SkipList {
            words,
            entries: Entries::new(),
            max_height: AtomicUsize::new(1),
            len: AtomicUsize::new(0),
            bytes: AtomicUsize::new(bytes),
            writer: Mutex::new(Writer {
                // The head: tower, header, trailer, one key word.
                next_word: u64::from(HEAD) + 3,
                next_entry: 0,
                rng: 0x9e37_79b9_7f4a_7c15,
            }),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len.load(Relaxed)
    }

    pub(crate) fn approximate_bytes(&self) -> usize {
        self.bytes.load(Relaxed)
    }

    #[inline]
    fn node(&self, id: u32) -> Node<'_> {
        let (chunk, at) = Words::locate(id);
        Node {
            chunk: self.words.chunk(chunk).unwrap_or(&[]),
            at,
        }
    }

    /// The entry bytes (internal key, value) of a node and its user-key length.
    #[inline]
    fn entry_of(&self, n: Node<'_>) -> (usize, &[u8]) {
        let (klen, entry_no) = n.header();
        let e = self
            .entries
            .slot(entry_no)
            .and_then(OnceLock::get)
            .map_or(&[][..], |b| &b[..]);
        (klen, e)
    }

    /// Internal key and value of node `id` (empty for NIL and the head).
    #[inline]
    pub(crate) fn key_value(&self, id: u32) -> (&[u8], &[u8]) {
        if id == NIL || id == HEAD {
            return (&[], &[]);
        }
        let (klen, e) = self.entry_of(self.node(id));
        e.split_at(e.len().min(klen + TRAILER_LEN))
    }

    /// Order of node `n`'s user key against `t`'s, and `d(n, t)`.
    fn cmp_user_key(&self, n: Node<'_>, t: &Target<'_>) -> (Ordering, u8) {
        let (ord, pos) = n.cmp_padded(t);
        if ord != Ordering::Equal {
            return (ord, pos);
        }
        let (klen, e) = self.entry_of(n);
        let tlen = t.user_key.len();
        // Equal on P: unless both keys run past the inline bytes, the shorter is a prefix.
        let ord = if klen.min(tlen) > INLINE_BYTES {
            e.get(..klen).unwrap_or(e).cmp(t.user_key)
        } else {
            klen.cmp(&tlen)
        };
        (ord, NO_POS)
    }

    /// Order of node `n`'s internal key against `t`, as [`key::compare_internal`], and
    /// `d(n, t)`.
    fn cmp_node(&self, n: Node<'_>, t: &Target<'_>) -> (Ordering, u8) {
        let (ord, pos) = self.cmp_user_key(n, t);
        (ord.then_with(|| t.trailer.cmp(&n.trailer())), pos)
    }

    /// First node `>= t` (NIL if none), filling `splice` below the current height.
    #[inline]
    fn find_ge(&self, t: &Target<'_>, splice: &mut Splice) -> u32 {
        let mut x_id = HEAD;
        let mut x = self.node(HEAD);
        // The head differs from everything at byte 0 (see node.rs).
        let mut dx = 0u8;
        let mut level = self.max_height.load(Relaxed).clamp(1, MAX_HEIGHT) - 1;
        // A node already found `>= t` one level up; meeting it again decides nothing new.
        let mut known_ge = NIL;
        loop {
            let link = x.link(level);
            let s = link.next;
            let step = if s == NIL || s == known_ge {
                Step::Down
            } else {
                match t.step(link, dx) {
                    Step::Unknown => match self.cmp_node(self.node(s), t) {
                        (Ordering::Less, pos) => Step::Right(pos),
                        _ => Step::Down,
                    },
                    step => step,
                }
            };
            if let Step::Right(d) = step {
                x_id = s;
                x = self.node(s);
                dx = d;
                continue;
            }
            known_ge = s;
            if let Some(p) = splice.get_mut(level) {
                *p = (x_id, dx);
            }
            if level == 0 {
                return s;
            }
            level -= 1;
        }
    }

    /// First node `>= t`, or NIL.
    pub(crate) fn seek(&self, t: &Target<'_>) -> u32 {
        let mut splice = [(HEAD, 0); MAX_HEIGHT];
        self.find_ge(t, &mut splice)
    }

    /// Last node `< t`, or NIL.
    pub(crate) fn seek_lt(&self, t: &Target<'_>) -> u32 {
        let mut splice = [(HEAD, 0); MAX_HEIGHT];
        self.find_ge(t, &mut splice);
        match splice[0].0 {
            HEAD => NIL,
            id => id,
        }
    }

    /// Last node, or NIL.
    pub(crate) fn last(&self) -> u32 {
        let mut x_id = HEAD;
        let mut x = self.node(HEAD);
        let mut level = self.max_height.load(Relaxed).clamp(1, MAX_HEIGHT) - 1;
        loop {
            let next = x.link(level).next;
            if next != NIL {
                x_id = next;
                x = self.node(next);
            } else if level == 0 {
                return if x_id == HEAD { NIL } else { x_id };
            } else {
                level -= 1;
            }
        }
    }

    /// First node, or NIL.
    pub(crate) fn first(&self) -> u32 {
        self.node(HEAD).link(0).next
    }

    /// Successor of node `id` at level 0, or NIL.
    pub(crate) fn next_of(&self, id: u32) -> u32 {
        if id == NIL {
            return NIL;
        }
        self.node(id).link(0).next
    }

    /// The link a new node `n` (key `t`) gets towards `old.next`, where `old` was the link of
    /// its predecessor `x` with `dx = d(x, n)`. Derived from `old` when the hint settles
    /// it; otherwise reads the successor.
    fn successor_link(&self, old: Link, dx: u8, t: &Target<'_>) -> Link {
        if old.next == NIL {
            return Link {
                next: NIL,
                pos: NO_POS,
                hint: 0,
            };
        }
        if old.pos != NO_POS && dx != NO_POS {
            // n < s; if P(n) leaves P(x)'s run at or after where P(s) does, with the first
            // hint byte already smaller, then d(n, s) = d(x, s) and the hint carries over.
            if dx > old.pos || (dx == old.pos && (t.window(dx) >> 16) < (old.hint >> 16)) {
                return old;
            }
        }
        let s = self.node(old.next);
        let (_, pos) = s.cmp_padded(t);
        let hint = if pos == NO_POS { 0 } else { s.window(pos) };
        Link {
            next: old.next,
            pos,
            hint,
        }
    }

    /// Add an entry. Serialized against other inserts; concurrent with readers.
    ///
    /// # Panics
    ///
    /// If the list outgrows its `u32` indexes (2^32 words or entries, i.e. tens of GiB),
    /// far beyond any configured write buffer.
    pub(crate) fn insert(&self, user_key: &[u8], seq: SeqNo, kind: ValueKind, value: &[u8]) {
        let trailer = key::pack_trailer(seq.min(MAX_SEQNO), kind);
        // Build the entry before taking the lock, so the lock covers only the link.
        let total = user_key.len() + TRAILER_LEN + value.len();
        let mut buf = Vec::with_capacity(total);
        buf.extend_from_slice(user_key);
        buf.extend_from_slice(&trailer.to_le_bytes());
        buf.extend_from_slice(value);
        let entry = buf.into_boxed_slice();
        let t = Target::new(user_key, trailer);
        let kwords = inline_words(user_key.len());

        let mut w = self.writer.lock();
        let mut splice = [(HEAD, 0); MAX_HEIGHT];
        self.find_ge(&t, &mut splice);
        let height = w.random_height();
        if height > self.max_height.load(Relaxed) {
            // splice[max..height] is (HEAD, 0): the head precedes everything on unused levels.
            self.max_height.store(height, Relaxed);
        }
        let mut charged = total + ALLOC_OVERHEAD;

        let entry_no = index_u32(w.next_entry);
        let (echunk, _) = Entries::locate(entry_no);
        self.entries.ensure_chunk(echunk, OnceLock::new);
        charged += std::mem::size_of::<OnceLock<Box<[u8]>>>();
        w.next_entry += 1;
        if let Some(slot) = self.entries.slot(entry_no) {
            // A fresh slot: set cannot fail; if it somehow did, the entry would read empty.
            let _ = slot.set(entry);
        }

        let need = (height + 2 + kwords) as u64;
        let mut start = w.next_word;
        let (mut chunk, _) = Words::locate(index_u32(start));
        // Nodes never straddle chunks: skip to the first chunk start where this one fits.
        while start + need > Words::chunk_start(chunk) + Words::chunk_len(chunk) {
            chunk += 1;
            start = Words::chunk_start(chunk);
        }
        self.words.ensure_chunk(chunk, || AtomicU64::new(0));
        charged += need as usize * 8;
        index_u32(start + need - 1);
        w.next_word = start + need;
        let id = index_u32(start + height as u64);

        let node = self.node(id);
        let header = ((user_key.len() as u64) << 32) | u64::from(entry_no);
        let words = [header, trailer]
            .into_iter()
            .chain((0..kwords).map(|j| t.word(j)));
        for (slot, v) in node.chunk.iter().skip(node.at).zip(words) {
            slot.store(v, Relaxed);
        }
        for (i, &(p, dx)) in splice.iter().enumerate().take(height) {
            let link = self.successor_link(self.node(p).link(i), dx, &t);
            if let Some(slot) = node.link_slot(i) {
                slot.store(link.pack(), Relaxed);
            }
        }
        // Publish bottom-up; each Release store pairs with readers' Acquire loads of links.
        for (i, &(p, dx)) in splice.iter().enumerate().take(height) {
            let hint = if dx == NO_POS { 0 } else { t.window(dx) };
            let link = Link {
                next: id,
                pos: dx,
                hint,
            };
            if let Some(slot) = self.node(p).link_slot(i) {
                slot.store(link.pack(), Release);
            }
        }
        self.len.store(self.len.load(Relaxed) + 1, Relaxed);
        self.bytes
            .store(self.bytes.load(Relaxed) + charged, Relaxed);
        drop(w);
    }

    /// The newest entry for `user_key` with a sequence number `<= snapshot`: its kind and
    /// value, or `None` when the key has no such version.
    pub(crate) fn get(&self, user_key: &[u8], snapshot: SeqNo) -> Option<(ValueKind, &[u8])> {
        let trailer = key::pack_trailer(snapshot.min(MAX_SEQNO), ValueKind::FOR_SEEK);
        let t = Target::new(user_key, trailer);
        let id = self.seek(&t);
        if id == NIL {
            return None;
        }
        let n = self.node(id);
        if self.cmp_user_key(n, &t).0 != Ordering::Equal {
            return None;
        }
        let kind = ValueKind::from_u8((n.trailer() & 0xff) as u8)?;
        Some((kind, self.key_value(id).1))
    }
}

/// Narrow an arena index, which the list keeps below 2^32.
#[inline]
#[track_caller]
fn index_u32(i: u64) -> u32 {
    match u32::try_from(i) {
        Ok(v) => v,
        Err(_) => panic!("skiplist memtable exceeds its 2^32-slot arena (index {i})"),
    }
}
