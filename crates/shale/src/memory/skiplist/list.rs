//! The raw skiplist: one writer at a time, any number of lock-free readers, safe Rust.
//!
//! # Layout
//!
//! Nodes live in a word arena ([`Arena`] of `AtomicU64`). A node of height `h` whose user
//! key has `n` bytes occupies `h + 2 + w` consecutive words of one chunk, where
//! `w = clamp(ceil(n / 8), 1, INLINE_WORDS)`, and is identified by the index of its header
//! word. The tower sits *below* the header (as in RocksDB's `InlineSkipList`), so finding
//! level `i` or the key needs no height:
//!
//! ```text
//! id-h .. id-1             id                        id+1      id+2 .. id+1+w
//! next[h-1] .. next[0]     key_len<<32 | entry_no    trailer   user key, 8 bytes a word
//! ```
//!
//! Key words hold the user key big-endian and zero-padded, so comparing words as integers,
//! then lengths, is bytewise comparison: a search reads only the node's own cache line,
//! whatever the key format (db_bench's `%016d` keys share their first 10 bytes). Only keys
//! longer than `INLINE_WORDS * 8` bytes that tie on that much fall back to the entry bytes.
//! `entry_no` indexes the entry arena, whose slot holds one allocation, `internal key |
//! value`, for `key()`/`value()`. `next[i]` is the successor at level `i`; 0 means none.
//! The head is a full-height tower at a fixed index; word 0 is never a node, so 0 is null.
//!
//! # Why readers never see a half-built node (proof sketch)
//!
//! Inserts are serialized by `writer` (a mutex), so there is one writer at a time; the
//! argument is LevelDB's.
//!
//! 1. The writer fills every word of a new node `n` (header, trailer, key, all `next[i]`)
//!    and sets its entry slot and any new chunk *before* the first store that makes `n`
//!    reachable. That store, `prev[0].next[0] = n`, is a `Release` store, as are the stores
//!    linking `n` at higher levels.
//! 2. A reader learns a node index only by an `Acquire` load of some `next` word (the head's
//!    words exist from construction). If it reads `n`, that load synchronizes with the
//!    `Release` store that wrote `n`, so everything the writer did before that store (1.)
//!    happens-before the reader's loads of `n`'s words and entry: it sees them whole.
//! 3. After publication, the only words of `n` that ever change are `next[i]`, and only from
//!    one successor `s` to a new node `m` with `n < m < s` whose own `next[i]` is already
//!    `s`. So each level is a sorted list at every instant, and a reader following `next[i]`
//!    sees either `n -> s` or `n -> m -> s`, both sorted.
//! 4. Linking is bottom-up, so a node reachable at level `i` is already linked at every
//!    level below; `max_height` is `Relaxed` because a reader that sees a raised height
//!    before the head's new link simply reads null at that level and descends.
//! 5. Nothing is freed or moved before the list is dropped (arena chunks are append-only),
//!    and readers borrow the list, so every index a reader holds stays valid.
//!
//! # Concurrent writers
//!
//! The mutex makes racing inserts correct but serial. FloDB's drain threads, to insert in
//! parallel, would need: allocation of words and entry slots by `fetch_add` (chunks are
//! already `get_or_init`), a `compare_exchange(prev.next[i]: succ -> n)` per level that, on
//! failure, re-searches the splice from `prev[i]` at that level and retries, a CAS-max on
//! `max_height`, and atomic counters (RocksDB's `InlineSkipList::InsertConcurrently`).

use std::cmp::Ordering;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Acquire, Ordering::Relaxed};

use parking_lot::Mutex;

use super::arena::Arena;
use crate::key::{self, MAX_SEQNO, SeqNo, TRAILER_LEN, ValueKind};

/// Tallest tower. With p = 1/4, 12 levels serve 4^12 = 16M entries at full speed.
pub(crate) const MAX_HEIGHT: usize = 12;
/// Most user-key words kept in a node; longer keys compare their tail from the entry.
const INLINE_WORDS: usize = 8;
const INLINE_BYTES: usize = INLINE_WORDS * 8;
/// Null in a `next` word (word 0 is never a node's header).
pub(crate) const NIL: u32 = 0;
/// The head's header: its tower fills words `0..MAX_HEIGHT`.
const HEAD: u32 = MAX_HEIGHT as u32;
/// Malloc's per-allocation overhead, charged per entry.
const ALLOC_OVERHEAD: usize = 16;

/// Node words; first chunk 2^13 words (64 KiB).
type Words = Arena<AtomicU64, 13>;
/// Entry slots; first chunk 2^10 slots (24 KiB).
type Entries = Arena<OnceLock<Box<[u8]>>, 10>;

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
        // Two trailing zero bits per extra level: P(height > h) = 4^-(h-1).
        1 + ((x.trailing_zeros() / 2) as usize).min(MAX_HEIGHT - 1)
    }
}

/// Key word `j` of `k`: bytes `8j..8j+8`, zero-padded, big-endian.
#[inline]
fn key_word(k: &[u8], j: usize) -> u64 {
    let s = k.get(j * 8..).unwrap_or(&[]);
    if let Some(w) = s.first_chunk::<8>() {
        return u64::from_be_bytes(*w);
    }
    let mut b = [0u8; 8];
    b[..s.len()].copy_from_slice(s);
    u64::from_be_bytes(b)
}

/// Number of key words a node stores for a user key of `len` bytes.
#[inline]
fn inline_words(len: usize) -> usize {
    len.div_ceil(8).clamp(1, INLINE_WORDS)
}

/// A search key split once so that each comparison is cheap.
#[derive(Clone, Copy)]
pub(crate) struct Target<'a> {
    word0: u64,
    user_key: &'a [u8],
    trailer: u64,
}

impl<'a> Target<'a> {
    /// The internal key `(user_key, trailer)`.
    pub(crate) fn new(user_key: &'a [u8], trailer: u64) -> Self {
        Target {
            word0: key_word(user_key, 0),
            user_key,
            trailer,
        }
    }

    /// An encoded internal key, split as [`key::compare_internal`] splits it.
    pub(crate) fn from_internal(ikey: &'a [u8]) -> Self {
        Target::new(key::user_key(ikey), key::trailer(ikey))
    }
}

/// A borrowed view of one node: its chunk and the offset of its header.
#[derive(Clone, Copy)]
struct Node<'a> {
    chunk: &'a [AtomicU64],
    at: usize,
}

impl<'a> Node<'a> {
    #[inline]
    fn word(&self, i: usize) -> u64 {
        self.chunk.get(self.at + i).map_or(0, |a| a.load(Relaxed))
    }

    /// (user key length, entry number).
    #[inline]
    fn header(&self) -> (usize, u32) {
        let h = self.word(0);
        ((h >> 32) as usize, h as u32)
    }

    #[inline]
    fn trailer(&self) -> u64 {
        self.word(1)
    }

    #[inline]
    fn key_word(&self, j: usize) -> u64 {
        self.word(2 + j)
    }

    #[inline]
    fn next_slot(&self, level: usize) -> Option<&'a AtomicU64> {
        self.chunk.get(self.at.checked_sub(level + 1)?)
    }

    #[inline]
    fn next(&self, level: usize) -> u32 {
        self.next_slot(level)
            .map_or(NIL, |a| a.load(Acquire) as u32)
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

    /// The entry bytes (internal key, value) of a node; empty for the head.
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

    /// Internal key and value of node `id`.
    #[inline]
    pub(crate) fn key_value(&self, id: u32) -> (&[u8], &[u8]) {
        if id == NIL || id == HEAD {
            return (&[], &[]);
        }
        let (klen, e) = self.entry_of(self.node(id));
        e.split_at(e.len().min(klen + TRAILER_LEN))
    }

    /// Order of node `n`'s internal key relative to `t`, as [`key::compare_internal`].
    #[inline]
    fn cmp_node(&self, n: Node<'_>, t: &Target<'_>) -> Ordering {
        let w0 = n.key_word(0);
        if w0 != t.word0 {
            return w0.cmp(&t.word0);
        }
        let (klen, _) = n.header();
        let tlen = t.user_key.len();
        let words = inline_words(klen).min(inline_words(tlen));
        for j in 1..words {
            let (a, b) = (n.key_word(j), key_word(t.user_key, j));
            if a != b {
                return a.cmp(&b);
            }
        }
        // Equal so far. Unless both keys go on past the inline words, the shorter one has
        // been compared whole and is a prefix of the other.
        let by_key = if klen.min(tlen) > INLINE_BYTES {
            let (_, e) = self.entry_of(n);
            key::user_key(e.get(..klen + TRAILER_LEN).unwrap_or(e)).cmp(t.user_key)
        } else {
            klen.cmp(&tlen)
        };
        by_key.then_with(|| t.trailer.cmp(&n.trailer()))
    }

    /// First node `>= t` (NIL if none), recording in `prev[i]` the last node `< t` at each
    /// level below the current height.
    #[inline]
    fn find_ge(&self, t: &Target<'_>, prev: &mut [u32; MAX_HEIGHT]) -> u32 {
        let mut x_id = HEAD;
        let mut x = self.node(HEAD);
        let mut level = self.max_height.load(Relaxed).clamp(1, MAX_HEIGHT) - 1;
        // A node already found `>= t` one level up; meeting it again needs no comparison.
        let mut known_ge = NIL;
        loop {
            let next = x.next(level);
            if next != NIL && next != known_ge {
                let n = self.node(next);
                if self.cmp_node(n, t) == Ordering::Less {
                    x_id = next;
                    x = n;
                    continue;
                }
                known_ge = next;
            }
            if let Some(p) = prev.get_mut(level) {
                *p = x_id;
            }
            if level == 0 {
                return next;
            }
            level -= 1;
        }
    }

    /// First node `>= t`, or NIL.
    pub(crate) fn seek(&self, t: &Target<'_>) -> u32 {
        let mut prev = [HEAD; MAX_HEIGHT];
        self.find_ge(t, &mut prev)
    }

    /// Last node `< t`, or NIL.
    pub(crate) fn seek_lt(&self, t: &Target<'_>) -> u32 {
        self.descend(|n| self.cmp_node(n, t) == Ordering::Less)
    }

    /// Last node, or NIL.
    pub(crate) fn last(&self) -> u32 {
        self.descend(|_| true)
    }

    /// First node, or NIL.
    pub(crate) fn first(&self) -> u32 {
        self.node(HEAD).next(0)
    }

    /// Successor of node `id` at level 0, or NIL.
    pub(crate) fn next_of(&self, id: u32) -> u32 {
        if id == NIL {
            return NIL;
        }
        self.node(id).next(0)
    }

    /// The last node for which `go_right` holds, given that it holds for a prefix of the
    /// list; NIL if it holds for none.
    #[inline]
    fn descend(&self, go_right: impl Fn(Node<'_>) -> bool) -> u32 {
        let mut x_id = HEAD;
        let mut x = self.node(HEAD);
        let mut level = self.max_height.load(Relaxed).clamp(1, MAX_HEIGHT) - 1;
        loop {
            let next = x.next(level);
            if next != NIL {
                let n = self.node(next);
                if go_right(n) {
                    x_id = next;
                    x = n;
                    continue;
                }
            }
            if level == 0 {
                return if x_id == HEAD { NIL } else { x_id };
            }
            level -= 1;
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
        let target = Target::new(user_key, trailer);
        let kwords = inline_words(user_key.len());

        let mut w = self.writer.lock();
        let mut prev = [HEAD; MAX_HEIGHT];
        self.find_ge(&target, &mut prev);
        let height = w.random_height();
        if height > self.max_height.load(Relaxed) {
            // prev[max..height] are HEAD, the predecessor on levels nobody used yet.
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
        let klen = user_key.len() as u64;
        let header = (klen << 32) | u64::from(entry_no);
        let words = [header, trailer].into_iter();
        let words = words.chain((0..kwords).map(|j| key_word(user_key, j)));
        for (slot, v) in node.chunk.iter().skip(node.at).zip(words) {
            slot.store(v, Relaxed);
        }
        for (i, &p) in prev.iter().enumerate().take(height) {
            if let Some(slot) = node.next_slot(i) {
                slot.store(u64::from(self.node(p).next(i)), Relaxed);
            }
        }
        // Publish bottom-up; each Release store pairs with readers' Acquire loads in `next`.
        for (i, &p) in prev.iter().enumerate().take(height) {
            if let Some(slot) = self.node(p).next_slot(i) {
                slot.store(u64::from(id), std::sync::atomic::Ordering::Release);
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
        // The node is >= (user_key, snapshot); it is a version of user_key iff its key
        // compares equal when the trailer is ignored.
        let n = self.node(id);
        let same_key = self.cmp_node(n, &Target::new(user_key, n.trailer())) == Ordering::Equal;
        if !same_key {
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
