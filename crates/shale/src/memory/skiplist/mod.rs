//! The skiplist memtable (LevelDB's memory component), in safe Rust but for its entry bytes.
//!
//! Entries are kept in a skiplist ordered by [`crate::key::compare_internal`] (user key
//! ascending, then sequence number descending). Nodes are runs of `AtomicU64` words in an
//! append-only arena addressed by `u32` index; a node holds its tower, its key's first 64
//! bytes and its trailer, and each tower link carries a 3-byte hint about the successor's
//! key, so that most comparisons read no node at all (`node.rs`). Each entry's bytes,
//! `internal key | value`, are one run of an append-only byte arena, which `key()` and
//! `value()` borrow (`bytes.rs`, the one `unsafe` part). `list.rs` argues why lock-free
//! readers never see a half-built node.
//!
//! Thread-safety: inserts run concurrently with each other (atomic reservations and a
//! compare-and-swap per linked level, `list.rs`), and `get` and iterators run concurrently
//! with them and see each entry whole or not at all. Entries are never removed: the memtable is dropped as
//! a whole once flushed, and an iterator keeps it alive.
//!
//! Cost (1M random 16-byte keys, 100-byte values): a search steps onto ~17 nodes, each
//! usually a cache miss; that, not comparison work, is the price of an insert or a get.

mod arena;
mod bloom;
mod bytes;
mod iter;
mod list;
mod node;
#[cfg(test)]
mod tests;

use std::sync::Arc;

pub use iter::SkipListIter;

use super::{MemLookup, MemTable, MemoryComponent};
use crate::iter::InternalIterator;
use crate::key::{SeqNo, ValueKind};
use bloom::MemBloom;
use list::SkipList;

/// The skiplist memory component (LevelDB's): one skiplist memtable at a time, no
/// background work; each memtable may carry a bloom filter over its keys
/// ([`crate::Options::memtable_bloom_ratio`]).
#[derive(Debug, Default)]
pub struct SkipListMemory {
    bloom_bytes: usize,
}

impl SkipListMemory {
    /// Memtables with a whole-key bloom filter of `bloom_bytes` bytes each (none below 64).
    pub fn with_bloom(bloom_bytes: usize) -> SkipListMemory {
        SkipListMemory { bloom_bytes }
    }
}

impl MemoryComponent for SkipListMemory {
    fn new_memtable(&self) -> Arc<dyn MemTable> {
        Arc::new(SkipListMemTable::with_bloom(self.bloom_bytes))
    }
}

/// A memtable backed by a concurrent-read skiplist. See the module docs.
pub struct SkipListMemTable {
    list: SkipList,
    /// Keys inserted, for gets of keys the memtable does not hold (`bloom.rs`).
    bloom: Option<MemBloom>,
}

impl Default for SkipListMemTable {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for SkipListMemTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkipListMemTable")
            .field("len", &self.list.len())
            .field("approximate_bytes", &self.list.approximate_bytes())
            .finish()
    }
}

impl SkipListMemTable {
    /// An empty memtable (about 64 KiB allocated for the first arena chunk).
    pub fn new() -> Self {
        SkipListMemTable {
            list: SkipList::new(),
            bloom: None,
        }
    }

    /// An empty memtable with a whole-key bloom filter of about `bloom_bytes` bytes (none
    /// below 64), which gets of absent keys ask before they search the skiplist.
    pub fn with_bloom(bloom_bytes: usize) -> Self {
        SkipListMemTable {
            list: SkipList::new(),
            bloom: MemBloom::new(bloom_bytes),
        }
    }

    /// False when the filter proves `user_key` absent.
    #[inline]
    pub(crate) fn may_hold(&self, user_key: &[u8]) -> bool {
        self.bloom.as_ref().is_none_or(|b| b.may_contain(user_key))
    }

    /// An iterator that keeps this memtable alive, without boxing (the trait's
    /// [`MemTable::iter`] boxes it). Starts unpositioned.
    pub fn iter_owned(self: &Arc<Self>) -> SkipListIter {
        SkipListIter::new(Arc::clone(self))
    }

    /// Like [`MemTable::get`] but borrowing the value instead of copying it.
    pub fn get_ref(&self, user_key: &[u8], snapshot: SeqNo) -> Option<(ValueKind, &[u8])> {
        if !self.may_hold(user_key) {
            return None;
        }
        self.list.get(user_key, snapshot)
    }

    /// Insert entries given in increasing internal-key order (user key ascending, then
    /// sequence number descending), each search starting from the previous entry's
    /// predecessors (FloDB's multi-insert). An entry out of order is still inserted, with a
    /// search from the head. Concurrent with other inserts and readers as
    /// [`MemTable::insert`]; each sequence number must be new to the memtable.
    pub fn insert_sorted<'a>(
        &self,
        entries: impl IntoIterator<Item = (&'a [u8], SeqNo, ValueKind, &'a [u8])>,
    ) {
        match &self.bloom {
            None => self.list.insert_sorted(entries),
            Some(b) => self
                .list
                .insert_sorted(entries.into_iter().inspect(|e| b.add(e.0))),
        }
    }

    /// Set the bits of `keys` in the memtable's filter (if it has one) without inserting
    /// them: for keys held elsewhere in the same memtable (FloDB's membuffer moving them
    /// in), before they are linked. The filter's words are read a group at a time before
    /// any is written, so their cache misses overlap instead of stalling one by one (a
    /// word update is a locked instruction, which a later load cannot pass).
    pub(crate) fn note_keys<'a>(&self, keys: impl IntoIterator<Item = &'a [u8]>) {
        const GROUP: usize = 16;
        let Some(b) = &self.bloom else {
            return;
        };
        let mut slots = Vec::with_capacity(GROUP);
        for key in keys {
            slots.push(b.slot(key));
            if slots.len() == GROUP {
                slots.drain(..).for_each(bloom::Slot::set);
            }
        }
        slots.drain(..).for_each(bloom::Slot::set);
    }

    /// [`SkipListMemTable::insert_sorted`] of keys already in the filter
    /// ([`SkipListMemTable::note_keys`]): their bits are not set again.
    pub(crate) fn insert_sorted_noted<'a>(
        &self,
        entries: impl IntoIterator<Item = (&'a [u8], SeqNo, ValueKind, &'a [u8])>,
    ) {
        self.list.insert_sorted(entries);
    }

    /// [`MemTable::insert`] of a key already in the filter ([`SkipListMemTable::note_keys`]).
    pub(crate) fn insert_noted(&self, user_key: &[u8], seq: SeqNo, kind: ValueKind, value: &[u8]) {
        self.list.insert(user_key, seq, kind, value);
    }

    /// User keys spread evenly over the memtable, in order: about `2 * want` to
    /// `4 * want` of them (a level of the skiplist, a uniform sample of its entries' keys),
    /// all of them when the memtable holds fewer.
    pub(crate) fn sample_user_keys(&self, want: usize) -> Vec<Vec<u8>> {
        self.list.sample_user_keys(want)
    }

    /// Like [`SkipListMemTable::get_ref`], with the entry's sequence number. Behind the
    /// filter: under FloDB, which sets a staged key's bits only when it drains the key,
    /// ask the membuffer first (`bloom.rs`).
    pub fn get_versioned(
        &self,
        user_key: &[u8],
        snapshot: SeqNo,
    ) -> Option<(SeqNo, ValueKind, &[u8])> {
        if !self.may_hold(user_key) {
            return None;
        }
        self.list.get_versioned(user_key, snapshot)
    }
}

impl MemTable for SkipListMemTable {
    fn insert(&self, user_key: &[u8], seq: SeqNo, kind: ValueKind, value: &[u8]) {
        match &self.bloom {
            None => self.list.insert(user_key, seq, kind, value),
            // The filter's word is read before the skiplist search and its bits are set
            // after it, just before the entry is linked: the word's cache miss overlaps the
            // search instead of stalling the put before it (`bloom.rs`).
            Some(b) => {
                let slot = b.slot(user_key);
                self.list
                    .insert_with(user_key, seq, kind, value, move || slot.set());
            }
        }
    }

    fn get(&self, user_key: &[u8], snapshot: SeqNo) -> Option<MemLookup> {
        if !self.may_hold(user_key) {
            return None;
        }
        match self.list.get(user_key, snapshot)? {
            (ValueKind::Delete, _) => Some(MemLookup::Deleted),
            (kind, value) => Some(MemLookup::Found(kind, value.to_vec())),
        }
    }

    fn iter(self: Arc<Self>) -> Box<dyn InternalIterator> {
        Box::new(SkipListIter::new(self))
    }

    fn approximate_bytes(&self) -> usize {
        self.list.approximate_bytes() + self.bloom.as_ref().map_or(0, MemBloom::bytes)
    }

    fn len(&self) -> usize {
        self.list.len()
    }
}
