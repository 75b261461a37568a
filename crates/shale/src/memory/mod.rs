//! The memory-component axis: where fresh writes live before they are flushed.
//!
//! A memtable holds internal entries (user key, seqno, kind, value) in internal-key order.
//! Writers insert concurrently (each writer of a logged group inserts its own batch, see
//! `db/write.rs`); reads and iterators run concurrently with them and see each entry either
//! whole or not at all. Which entries a reader may use is decided by sequence numbers, which
//! the engine publishes in order once the inserts below them finished. When a memtable is full, the engine freezes it (no more inserts), flushes it
//! to a table in the background and drops it once the flush has committed.

use std::sync::Arc;

use crate::iter::InternalIterator;
use crate::key::{SeqNo, ValueKind};

pub mod skiplist;

/// The newest version of a key visible at a snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemLookup {
    /// The key holds this value (kind is `Value` or `ValuePointer`).
    Found(ValueKind, Vec<u8>),
    /// The key was deleted.
    Deleted,
}

/// A memory component. Implementations: [`skiplist::SkipListMemTable`].
pub trait MemTable: Send + Sync {
    /// Add an entry. `seq` must be unique in this memtable. Called from several threads at
    /// once, and concurrently with readers.
    fn insert(&self, user_key: &[u8], seq: SeqNo, kind: ValueKind, value: &[u8]);
    /// The newest entry for `user_key` with a sequence number `<= snapshot`, if any.
    fn get(&self, user_key: &[u8], snapshot: SeqNo) -> Option<MemLookup>;
    /// An iterator over every entry, in internal-key order. It keeps the memtable alive.
    fn iter(self: Arc<Self>) -> Box<dyn InternalIterator>;
    /// Approximate bytes of memory used (keys, values and index overhead).
    fn approximate_bytes(&self) -> usize;
    /// Number of entries.
    fn len(&self) -> usize;
    /// True when empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Makes the empty memtables of one store (the engine asks for one at every switch).
pub type MemTableFactory = Arc<dyn Fn() -> Arc<dyn MemTable> + Send + Sync>;
