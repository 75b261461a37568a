//! The raw skiplist: any number of concurrent writers and lock-free readers, safe Rust but
//! for the borrow of an entry's bytes (`entry_of`, `bytes.rs`).
//!
//! Nodes are runs of `AtomicU64` words in an append-only [`Arena`] (layout and the link
//! hints that let most comparisons skip the successor: `node.rs`). Each entry's bytes,
//! `internal key | value`, are one run of the entry byte arena (`bytes.rs`), for
//! `key()`/`value()` and for comparing keys longer than the inline words.
//!
//! # Inserting concurrently
//!
//! A writer reserves its entry's bytes and its node words with atomic counters (a
//! `compare_exchange` loop each, as neither may straddle chunks), draws its tower
//! height from an atomic counter, raises `max_height` with `fetch_max`, and links its node
//! level by level, bottom-up: at each level it re-reads the predecessor's link, walks
//! right while the successor precedes the new key (another writer may have linked nodes
//! there since the search), sets its own link towards the successor, and swaps the
//! predecessor's link from the successor to itself with a `compare_exchange`. A failed
//! exchange means another writer changed that link: read again and retry from there
//! (RocksDB's `InlineSkipList::InsertConcurrently` does the same).
//!
//! # Why readers and writers never see a half-built node (proof sketch)
//!
//! 1. The writer fills every word of a new node `n` (header, trailer, key) and copies its
//!    entry's bytes (allocating any new chunk) *before* the first store that makes `n`
//!    reachable: the
//!    `Release` exchange of link 0 of `n`'s predecessor. Its link `i` is written before the
//!    exchange that links `n` on level `i`, and never again after it.
//! 2. Anyone learns a node index only from an `Acquire` load of a link (the head's words
//!    exist from construction; the only other source of a `NodeId`, node.rs, is the
//!    writer's own reserved node). If it reads `n`, that load synchronizes with the `Release`
//!    exchange that wrote `n`, so everything the writer did before it (1.) happens-before
//!    the loads of `n`'s words and entry bytes: they are seen whole. This is also what
//!    makes lending the entry bytes sound (`EntryBytes::run`'s contract, `bytes.rs`): a
//!    run's first cell is read only from the header of a node learned this way.
//! 3. After publication, the only words of `n` that change are its links, and link `i`
//!    only from successor `s` to a new node `m` with `n < m < s` whose own link `i` is
//!    already `s`: the exchange succeeds only if the link still names `s`, and the writer
//!    checked `n < m < s` against that very value. So each level is a sorted list at every
//!    instant, and a reader following link `i` sees either `n -> s` or `n -> m -> s`. A
//!    link word carries its hint, so nobody pairs a successor with another node's hint.
//! 4. Bottom-up linking means a node reachable on level `i` is linked on every level below,
//!    so a search descending from a node finds it on the level below. `max_height` is
//!    `Relaxed`: a search that sees a raised height before the head's new link reads null
//!    on that level and descends.
//! 5. Nothing is freed or moved before the list is dropped (arena chunks are append-only),
//!    and readers borrow the list, so every index held stays valid.

use std::cmp::Ordering;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

use super::arena::Arena;
use super::bytes::EntryBytes;
use super::node::{
    HEAD, INLINE_BYTES, Link, MAX_HEIGHT, NIL, NO_POS, Node, NodeId, Step, Target, inline_words,
};
use crate::key::{self, MAX_SEQNO, SeqNo, TRAILER_LEN, ValueKind};

/// Node words; first chunk 2^13 words (64 KiB).
type Words = Arena<AtomicU64, 13>;

/// A search's path: at each level, the last node before the target and `d(node, target)`.
type Splice = [(NodeId, u8); MAX_HEIGHT];

/// A tower height from the `n`-th draw: splitmix64 of `n`, one trailing zero bit per extra
/// level. p = 1/2: P(height > h) = 2^-h. With the link hints a search reads a node only when
/// it steps onto it, and descending is free (the tower is in the node), so the steps to the
/// right are the cost; 1/2 takes ~30% fewer of them than LevelDB's 1/4 (17 vs 25 at 1M
/// entries).
fn height_of_draw(n: u64) -> usize {
    let mut z = n.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    1 + (z.trailing_zeros() as usize).min(MAX_HEIGHT - 1)
}

/// The skiplist; see the module docs.
pub(crate) struct SkipList {
    words: Words,
    /// Each entry's `user key | trailer | value`; a node's header names its run.
    entries: EntryBytes,
    /// Height of the tallest tower linked so far (at least 1).
    max_height: AtomicUsize,
    len: AtomicUsize,
    bytes: AtomicUsize,
    /// First free node word.
    next_word: AtomicU64,
    /// Tower heights drawn so far.
    draws: AtomicU64,
}

impl SkipList {
    pub(crate) fn new() -> Self {
        let words = Words::new();
        words.ensure_chunk(0, || AtomicU64::new(0));
        // Charged by what entries use, not by chunk capacity: the first chunk alone is
        // 64 KiB, and a write buffer smaller than that would otherwise be "full" while empty.
        let bytes = std::mem::size_of::<Self>() + (HEAD.index() as usize + 3) * 8;
        SkipList {
            words,
            entries: EntryBytes::new(),
            max_height: AtomicUsize::new(1),
            len: AtomicUsize::new(0),
            bytes: AtomicUsize::new(bytes),
            // The head: tower, header, trailer, one key word.
            next_word: AtomicU64::new(u64::from(HEAD.index()) + 3),
            draws: AtomicU64::new(1),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len.load(Relaxed)
    }

    pub(crate) fn approximate_bytes(&self) -> usize {
        self.bytes.load(Relaxed)
    }

    #[inline]
    fn node(&self, id: NodeId) -> Node<'_> {
        let (chunk, at) = Words::locate(id.index());
        Node {
            chunk: self.words.chunk(chunk).unwrap_or(&[]),
            at,
        }
    }

    /// The entry bytes (internal key, value) of node `id` and its user-key length; none
    /// for NIL and the head.
    #[allow(unsafe_code)]
    #[inline]
    fn entry_of(&self, id: NodeId) -> (usize, &[u8]) {
        if id == NIL || id == HEAD {
            return (0, &[]);
        }
        let (klen, run) = self.node(id).header();
        // SAFETY: `id` is a `NodeId` of this list other than NIL and the head, so it names
        // a node whose words were written before this thread could hold the id: a link's
        // successor read with an `Acquire` load (by this thread, directly or earlier in the
        // same search, sorted batch or iteration), or the node this thread reserved and
        // filled itself. `NodeId` (node.rs) has no other source: its one constructor from
        // integers, `NodeId::reserved`, is called once, in `insert_from`, on what
        // `reserve_words` returned, and every link word written is a packed `Link` of ids
        // already held (`Node::store_link`, `Node::exchange_link`). A published node's
        // header, written before the node was linked, names the run `append` returned for
        // it on `self.entries`, and that `append` happens-before this read (proof sketch,
        // steps 1 and 2; program order for the thread's own node). Ids of one list are
        // never used with another: `SkipList` is private to the `skiplist` module, and its
        // ids live only in its own searches, in the predecessors a sorted batch passes
        // between its inserts into the same list, and in the iterator that holds its
        // memtable.
        (klen, unsafe { self.entries.run(run) })
    }

    /// Internal key and value of node `id` (empty for NIL and the head).
    #[inline]
    pub(crate) fn key_value(&self, id: NodeId) -> (&[u8], &[u8]) {
        let (klen, e) = self.entry_of(id);
        e.split_at(e.len().min(klen + TRAILER_LEN))
    }

    /// Order of node `id`'s user key against `t`'s, and `d(id, t)` (not NIL).
    fn cmp_user_key(&self, id: NodeId, t: &Target<'_>) -> (Ordering, u8) {
        let (ord, pos) = self.node(id).cmp_padded(t);
        if ord != Ordering::Equal {
            return (ord, pos);
        }
        let (klen, e) = self.entry_of(id);
        let tlen = t.user_key.len();
        // Equal on P: unless both keys run past the inline bytes, the shorter is a prefix.
        let ord = if klen.min(tlen) > INLINE_BYTES {
            e.get(..klen).unwrap_or(e).cmp(t.user_key)
        } else {
            klen.cmp(&tlen)
        };
        (ord, NO_POS)
    }

    /// Order of node `id`'s internal key against `t`, as [`key::compare_internal`], and
    /// `d(id, t)` (not NIL).
    fn cmp_node(&self, id: NodeId, t: &Target<'_>) -> (Ordering, u8) {
        let (ord, pos) = self.cmp_user_key(id, t);
        (
            ord.then_with(|| t.trailer.cmp(&self.node(id).trailer())),
            pos,
        )
    }

    /// First node `>= t` (NIL if none), filling `splice` below the current height.
    #[inline]
    fn find_ge(&self, t: &Target<'_>, splice: &mut Splice) -> NodeId {
        // The head differs from everything at byte 0 (see node.rs).
        let top = self.max_height.load(Relaxed).clamp(1, MAX_HEIGHT) - 1;
        self.find_ge_at(t, splice, HEAD, 0, top)
    }

    /// [`SkipList::find_ge`] from node `start` on level `level` (a node before `t` linked on
    /// that level, or the head) with `d(start, t)`: fills `splice` at and below `level`.
    #[inline]
    fn find_ge_at(
        &self,
        t: &Target<'_>,
        splice: &mut Splice,
        start: NodeId,
        d_start: u8,
        level: usize,
    ) -> NodeId {
        let mut x_id = start;
        let mut x = self.node(start);
        let mut dx = d_start;
        let mut level = level.min(MAX_HEIGHT - 1);
        // A node already found `>= t` one level up; meeting it again decides nothing new.
        let mut known_ge = NIL;
        loop {
            let link = x.link(level);
            let s = link.next;
            let step = if s == NIL || s == known_ge {
                Step::Down
            } else {
                match t.step(link, dx) {
                    Step::Unknown => match self.cmp_node(s, t) {
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
    pub(crate) fn seek(&self, t: &Target<'_>) -> NodeId {
        let mut splice = [(HEAD, 0); MAX_HEIGHT];
        self.find_ge(t, &mut splice)
    }

    /// Last node `< t`, or NIL.
    pub(crate) fn seek_lt(&self, t: &Target<'_>) -> NodeId {
        let mut splice = [(HEAD, 0); MAX_HEIGHT];
        self.find_ge(t, &mut splice);
        match splice[0].0 {
            HEAD => NIL,
            id => id,
        }
    }

    /// Last node, or NIL.
    pub(crate) fn last(&self) -> NodeId {
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

    /// User keys of nodes spread evenly over the list, in order: every node of the
    /// highest level expected to hold at least `2 * want` of them (a node reaches level `l`
    /// with probability 2^-l whatever its key, so a level is a uniform sample of the keys),
    /// so about `2 * want` to `4 * want` keys; all of them when the list is smaller.
    pub(crate) fn sample_user_keys(&self, want: usize) -> Vec<Vec<u8>> {
        let want = want.max(1);
        let top = self.max_height.load(Relaxed).clamp(1, MAX_HEIGHT) - 1;
        let mut level = 0;
        while level < top && (self.len() >> (level + 1)) >= 2 * want {
            level += 1;
        }
        let mut keys = Vec::new();
        let mut x = self.node(HEAD).link(level).next;
        while x != NIL {
            let (ikey, _) = self.key_value(x);
            let user_key = ikey.get(..ikey.len().saturating_sub(TRAILER_LEN));
            keys.push(user_key.unwrap_or_default().to_vec());
            x = self.node(x).link(level).next;
        }
        keys
    }

    /// First node, or NIL.
    pub(crate) fn first(&self) -> NodeId {
        self.node(HEAD).link(0).next
    }

    /// Successor of node `id` at level 0, or NIL.
    pub(crate) fn next_of(&self, id: NodeId) -> NodeId {
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

    /// Walk level `level` right from `(x, dx)` (a node before `t` and `d(x, t)`) to the last
    /// node before `t`: returns it, its `d` and its link on that level, whose successor is
    /// NIL or after `t`.
    fn last_before(
        &self,
        t: &Target<'_>,
        level: usize,
        mut x: NodeId,
        mut dx: u8,
    ) -> (NodeId, u8, Link) {
        loop {
            let link = self.node(x).link(level);
            let s = link.next;
            if s == NIL {
                return (x, dx, link);
            }
            let step = match t.step(link, dx) {
                Step::Unknown => match self.cmp_node(s, t) {
                    (Ordering::Less, pos) => Step::Right(pos),
                    _ => Step::Down,
                },
                step => step,
            };
            match step {
                Step::Right(d) => {
                    x = s;
                    dx = d;
                }
                _ => return (x, dx, link),
            }
        }
    }

    /// Reserve `need` consecutive node words inside one chunk; returns the first.
    #[track_caller]
    fn reserve_words(&self, need: u64) -> u64 {
        match self
            .words
            .reserve(&self.next_word, need, || AtomicU64::new(0))
        {
            Some(start) => u64::from(start),
            None => overflow("node words"),
        }
    }

    /// Add an entry. Safe to call from several threads at once, and concurrent with readers
    /// (see the module docs). `(user_key, seq)` must not be in the list already.
    ///
    /// # Panics
    ///
    /// If the list outgrows its `u32` indexes (2^32 node words or 2^32 8-byte cells of
    /// entry bytes, i.e. 32 GiB each), far beyond any configured write buffer.
    pub(crate) fn insert(&self, user_key: &[u8], seq: SeqNo, kind: ValueKind, value: &[u8]) {
        self.insert_from(user_key, seq, kind, value, None, || {});
    }

    /// [`SkipList::insert`], calling `before_link` once the search is done and before the
    /// new node becomes reachable (its first link): what must happen before any reader can
    /// find the entry, and may wait for memory the search can overlap (a memtable filter's
    /// word, `bloom.rs`).
    pub(crate) fn insert_with(
        &self,
        user_key: &[u8],
        seq: SeqNo,
        kind: ValueKind,
        value: &[u8],
        before_link: impl FnOnce(),
    ) {
        self.insert_from(user_key, seq, kind, value, None, before_link);
    }

    /// Insert `entries`, given in increasing internal-key order (a sorted batch: FloDB's
    /// multi-insert), each search starting from the previous entry's predecessors instead
    /// of the head; an entry out of order is searched from the head. Safe beside other
    /// inserts and readers, as [`SkipList::insert`]; each entry is linked on its own (the
    /// batch as a whole is not atomic). Same requirements and panics.
    pub(crate) fn insert_sorted<'a>(
        &self,
        entries: impl IntoIterator<Item = (&'a [u8], SeqNo, ValueKind, &'a [u8])>,
    ) {
        let mut preds = None;
        for (user_key, seq, kind, value) in entries {
            preds = Some(self.insert_from(user_key, seq, kind, value, preds.as_ref(), || {}));
        }
    }

    /// Where a search for `t` can resume from `prev`, the predecessors of an earlier key on
    /// each level (nodes never leave a level, so each is still before that key, and before
    /// `t` if the keys come in order): climbs from level 0 to the first level whose
    /// successor is not before `t` and searches down from there, and gives the levels
    /// above it up to `height` their distances to `t`. False (the splice half-filled) when
    /// a predecessor is not before `t`: the caller searches from the head.
    fn resume(
        &self,
        t: &Target<'_>,
        prev: &[NodeId; MAX_HEIGHT],
        height: usize,
        splice: &mut Splice,
    ) -> bool {
        let top = self.max_height.load(Relaxed).clamp(1, MAX_HEIGHT);
        let d = |p: NodeId| -> Option<u8> {
            if p == HEAD {
                return Some(0);
            }
            match self.cmp_node(p, t) {
                (Ordering::Less, pos) => Some(pos),
                _ => None,
            }
        };
        let mut start = (top - 1, HEAD, 0u8);
        for (level, &p) in prev.iter().enumerate().take(top) {
            let Some(dp) = d(p) else {
                return false;
            };
            let link = self.node(p).link(level);
            let bracketed = link.next == NIL
                || match t.step(link, dp) {
                    Step::Down => true,
                    Step::Right(_) => false,
                    Step::Unknown => self.cmp_node(link.next, t).0 != Ordering::Less,
                };
            if bracketed || level == top - 1 {
                start = (level, p, dp);
                break;
            }
        }
        let (level, p, dp) = start;
        for l in level + 1..height.min(MAX_HEIGHT) {
            let q = prev.get(l).copied().unwrap_or(HEAD);
            let Some(dq) = d(q) else {
                return false;
            };
            if let Some(slot) = splice.get_mut(l) {
                *slot = (q, dq);
            }
        }
        // Above the new node only the ids matter (the next entry resumes from them; the
        // link loop reads levels below `height` alone): keep the earlier ones.
        for l in (level + 1).max(height)..MAX_HEIGHT {
            if let (Some(slot), Some(&q)) = (splice.get_mut(l), prev.get(l)) {
                *slot = (q, 0);
            }
        }
        self.find_ge_at(t, splice, p, dp, level);
        true
    }

    /// Insert one entry, its search resuming from `prev` when given (see
    /// [`SkipList::insert_sorted`]); returns its predecessors on each level for the next.
    fn insert_from(
        &self,
        user_key: &[u8],
        seq: SeqNo,
        kind: ValueKind,
        value: &[u8],
        prev: Option<&[NodeId; MAX_HEIGHT]>,
        before_link: impl FnOnce(),
    ) -> [NodeId; MAX_HEIGHT] {
        let trailer = key::pack_trailer(seq.min(MAX_SEQNO), kind);
        let t = Target::new(user_key, trailer);
        let kwords = inline_words(user_key.len());

        let height = height_of_draw(self.draws.fetch_add(1, Relaxed));
        let Some((run, mut charged)) =
            self.entries
                .append(&[user_key, &trailer.to_le_bytes(), value])
        else {
            overflow("entry bytes")
        };

        let need = (height + 2 + kwords) as u64;
        let start = self.reserve_words(need);
        charged += need as usize * 8;
        // `reserve_words` checked that the node's last word has a `u32` index.
        let id = NodeId::reserved(start, height).unwrap_or_else(|| overflow("node words"));
        let node = self.node(id);
        let header = ((user_key.len() as u64) << 32) | u64::from(run);
        // `reserve_words` keeps the node inside its chunk, so the pattern always matches.
        if let Some([h, tr, key @ ..]) = node.chunk.get(node.at..) {
            h.store(header, Relaxed);
            tr.store(trailer, Relaxed);
            for (j, slot) in key.iter().take(kwords).enumerate() {
                slot.store(t.word(j), Relaxed);
            }
        }

        // The search fills the splice up to the height it saw; above it, the head precedes
        // everything (and a level another writer raised meanwhile is walked from the head).
        let mut splice = [(HEAD, 0); MAX_HEIGHT];
        let resumed = prev.is_some_and(|prev| self.resume(&t, prev, height, &mut splice));
        if !resumed {
            splice = [(HEAD, 0); MAX_HEIGHT];
            self.find_ge(&t, &mut splice);
        }
        before_link();
        self.max_height.fetch_max(height, Relaxed);
        'levels: for (level, &(p, dp)) in splice.iter().enumerate().take(height) {
            let (mut x, mut dx) = (p, dp);
            loop {
                let (pred, dpred, old) = self.last_before(&t, level, x, dx);
                let mine = self.successor_link(old, dpred, &t);
                node.store_link(level, mine);
                let hint = if dpred == NO_POS { 0 } else { t.window(dpred) };
                let link = Link {
                    next: id,
                    pos: dpred,
                    hint,
                };
                // Release: publishes the node's words (and link `level`) to whoever reads
                // this link. Acquire on failure: the new successor is then read whole.
                match self.node(pred).exchange_link(level, old, link) {
                    Some(true) => break,
                    Some(false) => {
                        // Another writer linked a node after `pred`: go on from `pred`.
                        x = pred;
                        dx = dpred;
                    }
                    // Unreachable for a node of this list; stop here rather than link a
                    // level above one the node is missing from.
                    None => break 'levels,
                }
            }
        }
        self.len.fetch_add(1, Relaxed);
        self.bytes.fetch_add(charged, Relaxed);
        // The new node precedes the next key of a sorted batch on its levels; above them,
        // the predecessors this search found.
        let mut preds = [HEAD; MAX_HEIGHT];
        for (level, (p, &(q, _))) in preds.iter_mut().zip(splice.iter()).enumerate() {
            *p = if level < height { id } else { q };
        }
        preds
    }

    /// The newest entry for `user_key` with a sequence number `<= snapshot`: its kind and
    /// value, or `None` when the key has no such version.
    pub(crate) fn get(&self, user_key: &[u8], snapshot: SeqNo) -> Option<(ValueKind, &[u8])> {
        self.get_versioned(user_key, snapshot)
            .map(|(_, kind, value)| (kind, value))
    }

    /// As [`SkipList::get`], with the entry's sequence number.
    pub(crate) fn get_versioned(
        &self,
        user_key: &[u8],
        snapshot: SeqNo,
    ) -> Option<(SeqNo, ValueKind, &[u8])> {
        let trailer = key::pack_trailer(snapshot.min(MAX_SEQNO), ValueKind::FOR_SEEK);
        let t = Target::new(user_key, trailer);
        let id = self.seek(&t);
        if id == NIL {
            return None;
        }
        if self.cmp_user_key(id, &t).0 != Ordering::Equal {
            return None;
        }
        let trailer = self.node(id).trailer();
        let kind = ValueKind::from_u8((trailer & 0xff) as u8)?;
        Some((trailer >> 8, kind, self.key_value(id).1))
    }
}

/// The list outgrew one of its arenas' `u32` indexes.
#[cold]
#[track_caller]
fn overflow(what: &str) -> ! {
    panic!("skiplist memtable exceeds its 2^32-slot arena of {what}")
}
