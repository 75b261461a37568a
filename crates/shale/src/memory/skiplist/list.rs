//! The raw skiplist: one writer at a time, any number of lock-free readers, safe Rust.
//!
//! # Layout
//!
//! Nodes live in a word arena ([`Arena`] of `AtomicU32`). A node is identified by the index
//! of its first word and occupies `HDR + height` consecutive words in one chunk:
//!
//! ```text
//! word:  0          1          2          3 ..= 3+height-1
//!        prefix_hi  prefix_lo  entry_no   next[0] .. next[height-1]
//! ```
//!
//! `prefix` is the first 8 bytes of the user key, zero-padded, big-endian: comparing two
//! prefixes as integers orders keys exactly as bytewise comparison does whenever the
//! prefixes differ, so a search touches only the node's words (one cache line) for almost
//! every comparison and reads the key bytes only on a prefix tie. `entry_no` indexes the
//! entry arena, whose slot holds one allocation `varint(ikey_len) | internal key | value`.
//! `next[i]` is the successor at level `i`; 0 means none. Node 0 is the head (a full-height
//! tower; its other words are unused), which is never anyone's successor, so 0 can be null.
//! An average node (height 4/3 with p = 1/4) takes about 17 bytes of tower.
//!
//! # Why readers never see a half-built node (proof sketch)
//!
//! Inserts are serialized by `writer` (a mutex), so there is one writer at a time; the
//! argument is LevelDB's.
//!
//! 1. The writer fills every word of a new node `n` (prefix, entry number, all `next[i]`)
//!    and sets its entry slot and any new chunk *before* the first store that makes `n`
//!    reachable. That store, `prev[0].next[0] = n`, is a `Release` store, as are the stores
//!    linking `n` at higher levels.
//! 2. A reader learns a node index only by an `Acquire` load of some `next` word (the head's
//!    words exist from construction). If it reads `n`, that load synchronizes with the
//!    `Release` store that wrote `n`, so everything the writer did before that store (1.)
//!    happens-before the reader's loads of `n`'s words and entry: it sees them whole.
//! 3. After publication, the only word of `n` that ever changes is `next[i]`, and only from
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
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering::Acquire, Ordering::Relaxed};

use parking_lot::Mutex;

use super::arena::Arena;
use crate::format::{decode_varint64, put_varint64, varint_len};
use crate::key::{self, MAX_SEQNO, SeqNo, TRAILER_LEN, ValueKind};

/// Tallest tower. With p = 1/4, 12 levels serve 4^12 = 16M entries at full speed.
pub(crate) const MAX_HEIGHT: usize = 12;
/// Words before the tower: prefix_hi, prefix_lo, entry_no.
const HDR: usize = 3;
/// The head node, and null in a `next` word.
pub(crate) const NIL: u32 = 0;
/// Malloc's per-allocation overhead, charged per entry.
const ALLOC_OVERHEAD: usize = 16;

/// Node words; first chunk 2^14 words (64 KiB).
type Words = Arena<AtomicU32, 14>;
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

/// A search key split once so that each comparison is cheap.
#[derive(Clone, Copy)]
pub(crate) struct Target<'a> {
    prefix: u64,
    user_key: &'a [u8],
    trailer: u64,
}

impl<'a> Target<'a> {
    /// The internal key `(user_key, trailer)`.
    pub(crate) fn new(user_key: &'a [u8], trailer: u64) -> Self {
        Target {
            prefix: key_prefix(user_key),
            user_key,
            trailer,
        }
    }

    /// An encoded internal key, split as [`key::compare_internal`] splits it.
    pub(crate) fn from_internal(ikey: &'a [u8]) -> Self {
        Target::new(key::user_key(ikey), key::trailer(ikey))
    }
}

/// First 8 bytes of `k`, zero-padded, as a big-endian integer: a monotone image of the
/// bytewise order.
#[inline]
fn key_prefix(k: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = k.len().min(8);
    b[..n].copy_from_slice(&k[..n]);
    u64::from_be_bytes(b)
}

/// Split an entry into internal key and value.
#[inline]
fn split_entry(e: &[u8]) -> (&[u8], &[u8]) {
    let (len, hdr) = match e.first() {
        Some(&b) if b < 0x80 => (usize::from(b), 1),
        _ => decode_varint64(e).map_or((0, e.len()), |(v, n)| (v as usize, n)),
    };
    let body = e.get(hdr..).unwrap_or(&[]);
    if len <= body.len() {
        body.split_at(len)
    } else {
        (body, &[])
    }
}

/// A borrowed view of one node's words.
#[derive(Clone, Copy)]
struct Node<'a> {
    w: &'a [AtomicU32],
}

impl<'a> Node<'a> {
    #[inline]
    fn word(&self, i: usize) -> u32 {
        self.w.get(i).map_or(0, |a| a.load(Relaxed))
    }

    #[inline]
    fn prefix(&self) -> u64 {
        (u64::from(self.word(0)) << 32) | u64::from(self.word(1))
    }

    #[inline]
    fn entry_no(&self) -> u32 {
        self.word(2)
    }

    #[inline]
    fn next(&self, level: usize) -> u32 {
        self.w.get(HDR + level).map_or(NIL, |a| a.load(Acquire))
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
        let mut bytes = words.ensure_chunk(0, || AtomicU32::new(0));
        bytes += std::mem::size_of::<Self>();
        SkipList {
            words,
            entries: Entries::new(),
            max_height: AtomicUsize::new(1),
            len: AtomicUsize::new(0),
            bytes: AtomicUsize::new(bytes),
            writer: Mutex::new(Writer {
                next_word: (HDR + MAX_HEIGHT) as u64,
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
        Node {
            w: self.words.tail(id).unwrap_or(&[]),
        }
    }

    /// The entry bytes of node `id` (empty for the head or a bad index).
    #[inline]
    fn entry_of(&self, n: Node<'_>) -> &[u8] {
        self.entries
            .slot(n.entry_no())
            .and_then(OnceLock::get)
            .map_or(&[][..], |b| &b[..])
    }

    /// Internal key and value of node `id`.
    #[inline]
    pub(crate) fn key_value(&self, id: u32) -> (&[u8], &[u8]) {
        if id == NIL {
            return (&[], &[]);
        }
        split_entry(self.entry_of(self.node(id)))
    }

    /// Order of node `n`'s internal key relative to `t`, as [`key::compare_internal`].
    #[inline]
    fn cmp_node(&self, n: Node<'_>, t: &Target<'_>) -> Ordering {
        let p = n.prefix();
        if p != t.prefix {
            return p.cmp(&t.prefix);
        }
        let ikey = split_entry(self.entry_of(n)).0;
        match key::user_key(ikey).cmp(t.user_key) {
            Ordering::Equal => t.trailer.cmp(&key::trailer(ikey)),
            o => o,
        }
    }

    /// First node `>= t` (NIL if none), recording in `prev[i]` the last node `< t` at each
    /// level below the current height.
    #[inline]
    fn find_ge(&self, t: &Target<'_>, prev: &mut [u32; MAX_HEIGHT]) -> u32 {
        let mut x_id = NIL;
        let mut x = self.node(NIL);
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
        let mut prev = [NIL; MAX_HEIGHT];
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
        self.node(NIL).next(0)
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
        let mut x_id = NIL;
        let mut x = self.node(NIL);
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
                return x_id;
            }
            level -= 1;
        }
    }

    /// Add an entry. Serialized against other inserts; concurrent with readers.
    ///
    /// # Panics
    ///
    /// If the list outgrows its `u32` indexes (2^32 tower words or entries, i.e. tens of
    /// GiB), far beyond any configured write buffer.
    pub(crate) fn insert(&self, user_key: &[u8], seq: SeqNo, kind: ValueKind, value: &[u8]) {
        let trailer = key::pack_trailer(seq.min(MAX_SEQNO), kind);
        // Build the entry before taking the lock, so the lock covers only the link.
        let ikey_len = user_key.len() + TRAILER_LEN;
        let total = varint_len(ikey_len as u64) + ikey_len + value.len();
        let mut buf = Vec::with_capacity(total);
        put_varint64(&mut buf, ikey_len as u64);
        buf.extend_from_slice(user_key);
        buf.extend_from_slice(&trailer.to_le_bytes());
        buf.extend_from_slice(value);
        let entry = buf.into_boxed_slice();
        let target = Target::new(user_key, trailer);

        let mut w = self.writer.lock();
        let mut prev = [NIL; MAX_HEIGHT];
        self.find_ge(&target, &mut prev);
        let height = w.random_height();
        let max = self.max_height.load(Relaxed);
        if height > max {
            // prev[max..height] are NIL: the head, the predecessor on levels nobody used yet.
            self.max_height.store(height, Relaxed);
        }
        let mut charged = total + ALLOC_OVERHEAD;

        let entry_no = w.next_entry;
        let (echunk, _) = Entries::locate(index_u32(entry_no));
        charged += self.entries.ensure_chunk(echunk, OnceLock::new);
        w.next_entry += 1;
        if let Some(slot) = self.entries.slot(index_u32(entry_no)) {
            // A fresh slot: set cannot fail; if it somehow did, the node would read as empty.
            let _ = slot.set(entry);
        }

        let need = (HDR + height) as u64;
        let mut id = w.next_word;
        let (chunk, _) = Words::locate(index_u32(id));
        if id + need > Words::chunk_start(chunk) + Words::chunk_len(chunk) {
            // Towers never straddle chunks: skip the tail and start the next chunk.
            id = Words::chunk_start(chunk + 1);
        }
        let (chunk, _) = Words::locate(index_u32(id));
        charged += self.words.ensure_chunk(chunk, || AtomicU32::new(0));
        index_u32(id + need - 1);
        w.next_word = id + need;
        let id = index_u32(id);

        let node = self.node(id);
        let prefix = target.prefix;
        let init = [(prefix >> 32) as u32, prefix as u32, index_u32(entry_no)];
        for (slot, v) in node.w.iter().zip(init) {
            slot.store(v, Relaxed);
        }
        for (i, &p) in prev.iter().enumerate().take(height) {
            if let Some(slot) = node.w.get(HDR + i) {
                slot.store(self.node(p).next(i), Relaxed);
            }
        }
        // Publish bottom-up; each Release store pairs with readers' Acquire loads in `next`.
        for (i, &p) in prev.iter().enumerate().take(height) {
            if let Some(slot) = self.node(p).w.get(HDR + i) {
                slot.store(id, std::sync::atomic::Ordering::Release);
            }
        }
        self.len.store(self.len.load(Relaxed) + 1, Relaxed);
        self.bytes
            .store(self.bytes.load(Relaxed) + charged, Relaxed);
        drop(w);
    }

    /// The newest entry for `user_key` at or below `trailer`'s sequence number: its kind
    /// and value, or `None` when the key has no such version.
    pub(crate) fn get(&self, user_key: &[u8], snapshot: SeqNo) -> Option<(ValueKind, &[u8])> {
        let trailer = key::pack_trailer(snapshot.min(MAX_SEQNO), ValueKind::FOR_SEEK);
        let id = self.seek(&Target::new(user_key, trailer));
        if id == NIL {
            return None;
        }
        let (ikey, value) = self.key_value(id);
        if key::user_key(ikey) != user_key {
            return None;
        }
        let kind = ValueKind::from_u8((key::trailer(ikey) & 0xff) as u8)?;
        Some((kind, value))
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
