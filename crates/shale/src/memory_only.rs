//! The memory component alone, for benchmarks: [`MemoryOnly`].
//!
//! FloDB's memory-scaling experiment (EuroSys '17, Fig. 17) measures the memory component
//! with persistence and compaction disabled and full memtables dropped, so that what it
//! shows is the component itself, not the disk behind it. `MemoryOnly` is that setup for
//! any of Shale's memory components: the one [`Options::memory`] chooses, sized by
//! [`Options::write_buffer_size`], with its background work running (FloDB's drain
//! threads). Writes take a sequence number and go to the current memtable, as the engine's
//! writers insert their batches; when the memtable reaches the write buffer size, the
//! writer that notices it installs a fresh one and drops the full one, where the engine
//! would seal and flush it. There is no log, no file and no durability: a dropped
//! memtable's writes are gone, and reads see only the current memtable.
//!
//! `shale bench --memory-only` runs its put and get benchmarks on it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Mutex, RwLock};

use crate::db::check_entry;
use crate::error::Result;
use crate::key::{SeqNo, ValueKind};
use crate::memory::{MemLookup, MemTable, MemoryComponent, MemoryServices, MemoryStats};
use crate::options::Options;

/// A memory component without a store behind it (see the module docs).
pub struct MemoryOnly {
    memory: Arc<dyn MemoryComponent>,
    current: RwLock<Arc<dyn MemTable>>,
    /// The last sequence number given.
    seq: Arc<AtomicU64>,
    limit: usize,
    /// Held by the writer that replaces a full memtable.
    switching: Mutex<()>,
    dropped: AtomicU64,
}

impl std::fmt::Debug for MemoryOnly {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryOnly")
            .field("limit", &self.limit)
            .field("dropped", &self.dropped.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl MemoryOnly {
    /// The memory component `options` choose, started.
    ///
    /// # Errors
    /// Options that do not validate; a background thread that could not be started.
    pub fn new(options: &Options) -> Result<MemoryOnly> {
        options.validate()?;
        let memory = crate::design::memory_component(options);
        let seq = Arc::new(AtomicU64::new(0));
        let newest = Arc::clone(&seq);
        memory.start(MemoryServices {
            // No snapshots: every reader reads at the newest sequence number.
            oldest_snapshot: Arc::new(move || newest.load(Ordering::Acquire)),
        })?;
        Ok(MemoryOnly {
            current: RwLock::new(memory.new_memtable()),
            memory,
            seq,
            limit: options.write_buffer_size,
            switching: Mutex::new(()),
            dropped: AtomicU64::new(0),
        })
    }

    /// Set `key` to `value`.
    ///
    /// # Errors
    /// A key or value over the size limits (`MAX_KEY_SIZE`, `MAX_VALUE_SIZE`).
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        check_entry(key, value)?;
        self.insert(key, ValueKind::Value, value);
        Ok(())
    }

    /// Delete `key`.
    ///
    /// # Errors
    /// A key over the size limit.
    pub fn delete(&self, key: &[u8]) -> Result<()> {
        check_entry(key, &[])?;
        self.insert(key, ValueKind::Delete, &[]);
        Ok(())
    }

    /// The value of `key` in the current memtable (writes in dropped memtables are gone).
    pub fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        let table = Arc::clone(&self.current.read());
        match table.get(key, self.seq.load(Ordering::Acquire)) {
            Some(MemLookup::Found(_, v)) => Some(v),
            Some(MemLookup::Deleted) | None => None,
        }
    }

    /// Memtables filled and dropped so far.
    pub fn memtables_dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// The memory component's own counters.
    pub fn stats(&self) -> MemoryStats {
        self.memory.stats()
    }

    fn insert(&self, key: &[u8], kind: ValueKind, value: &[u8]) {
        let full = {
            // Held across the insert, so a memtable is replaced only once no insert into
            // it is running (as the engine seals a memtable only after its inserts
            // returned).
            let table = self.current.read();
            let seq: SeqNo = self.seq.fetch_add(1, Ordering::AcqRel) + 1;
            table.insert(key, seq, kind, value);
            // The engine's writer assists once its write is published; here a write is
            // visible at once. Under the read lock: a switch that waits for it waits for
            // this one drain of a partition, and the other writers, queued behind the
            // switch, with it (about twice a run; the engine's switch waits for no drain).
            table.assist();
            table.approximate_bytes() >= self.limit
        };
        if full && let Some(_one) = self.switching.try_lock() {
            let old = {
                let mut current = self.current.write();
                if current.approximate_bytes() < self.limit {
                    return;
                }
                std::mem::replace(&mut *current, self.memory.new_memtable())
            };
            self.dropped.fetch_add(1, Ordering::Relaxed);
            drop(old);
        }
    }
}

impl Drop for MemoryOnly {
    fn drop(&mut self) {
        self.memory.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::MemoryKind;

    fn options(memory: MemoryKind) -> Options {
        Options {
            memory,
            write_buffer_size: 64 << 10,
            ..Options::default()
        }
    }

    #[test]
    fn full_memtables_are_dropped_and_reads_see_the_current_one() {
        for memory in [MemoryKind::SkipList, MemoryKind::FloDb] {
            let m = MemoryOnly::new(&options(memory)).unwrap();
            m.put(b"first", b"1").unwrap();
            assert_eq!(m.get(b"first"), Some(b"1".to_vec()));
            m.delete(b"first").unwrap();
            assert_eq!(m.get(b"first"), None);
            std::thread::scope(|s| {
                for t in 0..2u32 {
                    let m = &m;
                    s.spawn(move || {
                        for i in 0..5000u32 {
                            m.put(format!("k{t}-{i:05}").as_bytes(), &[7; 100]).unwrap();
                        }
                    });
                }
            });
            // About 1.3 MB of entries through 64 KiB memtables.
            assert!(m.memtables_dropped() >= 10, "{memory:?}: {m:?}");
            assert_eq!(
                m.get(b"k0-00000"),
                None,
                "{memory:?}: the first memtable was dropped"
            );
            // A put that fills the memtable drops it with what it holds, that put included
            // (memory-only mode keeps nothing it cannot hold): whether this one does
            // depends on how full the writers left it. After such a drop the next put
            // lands in an empty memtable, which it cannot fill.
            let dropped = m.memtables_dropped();
            m.put(b"again", b"2").unwrap();
            if m.memtables_dropped() != dropped {
                m.put(b"again", b"2").unwrap();
                assert_eq!(m.memtables_dropped(), dropped + 1, "{memory:?}");
            }
            assert_eq!(m.get(b"again"), Some(b"2".to_vec()), "{memory:?}");
            if memory == MemoryKind::FloDb {
                let st = m.stats();
                assert!(st.staged > 0, "{st:?}");
            } else {
                assert!(m.stats().is_empty());
            }
        }
    }

    #[test]
    fn sizes_and_options_are_checked() {
        let m = MemoryOnly::new(&options(MemoryKind::SkipList)).unwrap();
        let big = vec![0u8; crate::options::MAX_KEY_SIZE + 1];
        assert!(m.put(&big, b"v").is_err());
        assert!(m.delete(&big).is_err());
        let bad = Options {
            write_buffer_size: 10,
            ..Options::default()
        };
        assert!(MemoryOnly::new(&bad).is_err());
    }
}
