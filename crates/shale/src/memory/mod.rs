//! The memory-component axis: where fresh writes live before they are flushed.
//!
//! A memtable holds internal entries (user key, seqno, kind, value) in internal-key order.
//! Writers insert concurrently (each writer of a logged group inserts its own batch, see
//! `db/write.rs`); reads and iterators run concurrently with them and see each entry either
//! whole or not at all. Which entries a reader may use is decided by sequence numbers, which
//! the engine publishes in order once the inserts below them finished. When a memtable is
//! full, the engine freezes it (no more inserts), waits until every insert into it has
//! returned, [seals](MemTable::seal) it, hands it to the layout's flush in the background
//! and drops it once the flush has committed.
//!
//! A store's [`MemoryComponent`] makes its memtables and may run background work of its
//! own (FloDB's drain threads move a hash membuffer's entries into a sorted memtable),
//! started with the [`MemoryServices`] the engine offers once the store is open and
//! stopped at close.

use std::sync::Arc;

use crate::iter::InternalIterator;
use crate::key::{SeqNo, ValueKind};

pub mod flodb;
pub mod skiplist;

/// The newest version of a key visible at a snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemLookup {
    /// The key holds this value (kind is `Value` or `ValuePointer`).
    Found(ValueKind, Vec<u8>),
    /// The key was deleted.
    Deleted,
}

/// A memory component. Implementations: [`skiplist::SkipListMemTable`],
/// [`flodb::FloDbMemTable`].
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
    /// Called after the memtable was frozen and every insert into it has returned, before
    /// it is iterated for a flush (at runtime and in recovery): a memtable that stages
    /// writes outside its sorted part (FloDB's membuffer) moves them in here, so that
    /// [`MemTable::iter`] yields every entry. May be called more than once; later calls
    /// find nothing to do. Default: nothing.
    fn seal(&self) {}
    /// Called by a writer after its write into this memtable was published, outside every
    /// lock of the write path (so it holds up no other write): a memtable with background
    /// work of its own may do a share of it on the writer's thread, which slows this writer
    /// only. FloDB's drains the membuffer partition a put last found full
    /// (`FloDbOptions::writer_drains`). Default: nothing.
    fn assist(&self) {}
}

/// What the engine offers a memory component's background work.
#[derive(Clone)]
pub struct MemoryServices {
    /// The sequence number of the oldest snapshot a reader holds, or the newest published
    /// sequence number when no snapshot is held: a memory component that updates entries
    /// in place (FloDB) may overwrite a version only when no snapshot at or above it and
    /// below its successor exists, which holds for every version below the one visible at
    /// this sequence number.
    pub oldest_snapshot: Arc<dyn Fn() -> SeqNo + Send + Sync>,
}

impl std::fmt::Debug for MemoryServices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryServices")
            .field("oldest_snapshot", &(self.oldest_snapshot)())
            .finish()
    }
}

/// One store's memory component (the memory axis): it makes the store's memtables and runs
/// its own background work. Implementations: [`skiplist::SkipListMemory`],
/// [`flodb::FloDbMemory`].
pub trait MemoryComponent: Send + Sync {
    /// A new, empty memtable (the engine asks for one at open, at every switch and for
    /// each memtable recovery fills).
    fn new_memtable(&self) -> Arc<dyn MemTable>;

    /// The component's durable state in a new store: what the MANIFEST's memory-axis
    /// records are replayed into (a component that persists something of its own; the
    /// version set keeps it, [`crate::version::set::VersionSet::axes`]). Default: nothing,
    /// and any memory record is refused.
    fn empty_state(&self) -> Box<dyn crate::axis::AxisState> {
        Box::new(crate::axis::NoState(crate::axis::Axis::Memory))
    }
    /// Start the component's background work, once the store is open. Default: none.
    ///
    /// # Errors
    /// A thread that could not be started; the open fails with it.
    fn start(&self, services: MemoryServices) -> crate::error::Result<()> {
        let _ = services;
        Ok(())
    }
    /// Stop the background work and wait for it, at close (after the engine's own
    /// background threads stopped; the memtables are not flushed at close, their writes
    /// are in the log). Default: nothing.
    fn stop(&self) {}
    /// The component's own counters since open (`Stats::memory`). Default: all zero.
    fn stats(&self) -> MemoryStats {
        MemoryStats::default()
    }
}

/// A memory component's own counters since the store was opened: what a component with a
/// staging level (FloDB's membuffer) did with the writes it took. All zero for the plain
/// skiplist. `Display` prints one line, or nothing when every counter is zero.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MemoryStats {
    /// Versions the staging level took (moved on since, or still staged).
    pub staged: u64,
    /// Writes that found their staging partition full and went to the sorted level
    /// directly.
    pub direct: u64,
    /// Partition drains by background threads that moved something, and the versions
    /// they moved.
    pub background_drains: u64,
    /// Versions background drains moved.
    pub background_moved: u64,
    /// Iterators (scans, and the engine's own) that drained the staging level before
    /// iterating, and the versions they moved.
    pub scan_drains: u64,
    /// Versions scans moved.
    pub scan_moved: u64,
    /// Partitions a scan found being drained by another thread and waited for instead of
    /// draining them itself (the paper's piggybacking: the scan shares that drain's work).
    pub scan_waits: u64,
    /// Versions moved when a frozen memtable was sealed for its flush.
    pub seal_moved: u64,
    /// Partition drains by writers after their own write (of the partition a put last
    /// found full, once the write is published, `FloDbOptions::writer_drains`) that moved
    /// something.
    pub writer_drains: u64,
    /// Versions writers' drains moved.
    pub writer_moved: u64,
}

impl MemoryStats {
    /// True when every counter is zero.
    pub fn is_empty(&self) -> bool {
        *self == MemoryStats::default()
    }

    /// Every counter with its name (the field's), in declaration order.
    pub fn named(&self) -> [(&'static str, u64); 10] {
        [
            ("staged", self.staged),
            ("direct", self.direct),
            ("background_drains", self.background_drains),
            ("background_moved", self.background_moved),
            ("scan_drains", self.scan_drains),
            ("scan_moved", self.scan_moved),
            ("scan_waits", self.scan_waits),
            ("seal_moved", self.seal_moved),
            ("writer_drains", self.writer_drains),
            ("writer_moved", self.writer_moved),
        ]
    }
}

impl std::fmt::Display for MemoryStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_empty() {
            return Ok(());
        }
        writeln!(
            f,
            "membuffer: staged {} direct {}; drained by threads {} in {} drains, by writers {} in {} drains, by scans {} in {} scans ({} partitions waited for), at seal {}",
            self.staged,
            self.direct,
            self.background_moved,
            self.background_drains,
            self.writer_moved,
            self.writer_drains,
            self.scan_moved,
            self.scan_drains,
            self.scan_waits,
            self.seal_moved
        )
    }
}
