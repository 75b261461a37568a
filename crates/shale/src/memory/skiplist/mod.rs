//! The skiplist memtable (LevelDB's memory component), in safe Rust.
//!
//! Entries are kept in a skiplist ordered by [`crate::key::compare_internal`] (user key
//! ascending, then sequence number descending). Towers live in an append-only arena of
//! `AtomicU32` words addressed by `u32` index, each node carrying the first 8 bytes of its
//! user key so that most comparisons never leave the node; each entry (internal key and
//! value) is one allocation. `list.rs` documents the layout and argues why lock-free readers
//! never see a half-built node.
//!
//! Thread-safety: inserts are serialized (the trait's contract; an internal mutex also makes
//! racing inserts safe, just serial); `get` and iterators run concurrently with an insert and
//! see each entry whole or not at all. Entries are never removed: the memtable is dropped as
//! a whole once flushed, and an iterator keeps it alive.

mod arena;
mod iter;
mod list;
mod node;
#[cfg(test)]
mod tests;

use std::sync::Arc;

pub use iter::SkipListIter;

use super::{MemLookup, MemTable};
use crate::iter::InternalIterator;
use crate::key::{SeqNo, ValueKind};
use list::SkipList;

/// A memtable backed by a concurrent-read skiplist. See the module docs.
pub struct SkipListMemTable {
    list: SkipList,
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
        }
    }

    /// An iterator that keeps this memtable alive, without boxing (the trait's
    /// [`MemTable::iter`] boxes it). Starts unpositioned.
    pub fn iter_owned(self: &Arc<Self>) -> SkipListIter {
        SkipListIter::new(Arc::clone(self))
    }

    /// Like [`MemTable::get`] but borrowing the value instead of copying it.
    pub fn get_ref(&self, user_key: &[u8], snapshot: SeqNo) -> Option<(ValueKind, &[u8])> {
        self.list.get(user_key, snapshot)
    }
}

impl MemTable for SkipListMemTable {
    fn insert(&self, user_key: &[u8], seq: SeqNo, kind: ValueKind, value: &[u8]) {
        self.list.insert(user_key, seq, kind, value);
    }

    fn get(&self, user_key: &[u8], snapshot: SeqNo) -> Option<MemLookup> {
        match self.list.get(user_key, snapshot)? {
            (ValueKind::Delete, _) => Some(MemLookup::Deleted),
            (kind, value) => Some(MemLookup::Found(kind, value.to_vec())),
        }
    }

    fn iter(self: Arc<Self>) -> Box<dyn InternalIterator> {
        Box::new(SkipListIter::new(self))
    }

    fn approximate_bytes(&self) -> usize {
        self.list.approximate_bytes()
    }

    fn len(&self) -> usize {
        self.list.len()
    }
}
