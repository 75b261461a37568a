//! The table cache: open tables, bounded by a file-count budget, least recently used first
//! out.
//!
//! A hit takes a shared lock and bumps an atomic use stamp, so concurrent readers do not
//! serialize on it. A miss opens the table without holding the lock (the open reads the
//! footer, index, filter and properties) and then inserts it; two threads missing on the
//! same file at once may both open it, and the second insert keeps the first table.
//!
//! Thread-safety: `TableCache` is `Send + Sync`; share it by reference or `Arc`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::RwLock;

use crate::cache::block_cache::BlockCache;
use crate::env::Env;
use crate::error::Result;
use crate::table::{Table, table_file_name};

struct Entry {
    table: Arc<Table>,
    last_use: AtomicU64,
}

/// A table of a batch lookup ([`TableCache::tables`]), or the error opening it.
pub type TableSlot = std::result::Result<Arc<Table>, Box<crate::Error>>;

/// Open tables of one store, keyed by file number. See the module docs.
pub struct TableCache {
    env: Env,
    dir: PathBuf,
    capacity: usize,
    block_cache: Option<Arc<BlockCache>>,
    verify_checksums: bool,
    tables: RwLock<HashMap<u64, Entry, crate::cache::IntHashBuilder>>,
    clock: AtomicU64,
}

impl std::fmt::Debug for TableCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableCache")
            .field("dir", &self.dir)
            .field("capacity", &self.capacity)
            .field("open", &self.len())
            .finish()
    }
}

impl TableCache {
    /// A cache of at most `max_open_files` tables (at least 1) from `dir`. Tables read data
    /// blocks through `block_cache` and check block checksums if `verify_checksums`.
    pub fn new(
        env: Env,
        dir: PathBuf,
        max_open_files: usize,
        block_cache: Option<Arc<BlockCache>>,
        verify_checksums: bool,
    ) -> TableCache {
        TableCache {
            env,
            dir,
            capacity: max_open_files.max(1),
            block_cache,
            verify_checksums,
            tables: RwLock::new(HashMap::default()),
            clock: AtomicU64::new(0),
        }
    }

    /// The open table `file_number`, opening `{dir}/{file_number:06}.sst` on a miss.
    ///
    /// # Errors
    /// I/O errors opening the file; [`crate::Error::Corruption`] from the table's checks.
    /// Failures are not cached: the next call tries again.
    pub fn table(&self, file_number: u64) -> Result<Arc<Table>> {
        let stamp = self.clock.fetch_add(1, Ordering::Relaxed);
        if let Some(e) = self.tables.read().get(&file_number) {
            e.last_use.store(stamp, Ordering::Relaxed);
            return Ok(Arc::clone(&e.table));
        }
        let path = self.dir.join(table_file_name(file_number));
        let file = self.env.open(&path)?;
        let table = Arc::new(Table::open(
            file,
            file_number,
            self.block_cache.clone(),
            self.verify_checksums,
        )?);
        let mut tables = self.tables.write();
        if let Some(e) = tables.get(&file_number) {
            return Ok(Arc::clone(&e.table));
        }
        while tables.len() >= self.capacity {
            // A scan is fine here: misses already pay for several reads of the file.
            let Some(victim) = tables
                .iter()
                .min_by_key(|(_, e)| e.last_use.load(Ordering::Relaxed))
                .map(|(&n, _)| n)
            else {
                break;
            };
            tables.remove(&victim);
        }
        tables.insert(
            file_number,
            Entry {
                table: Arc::clone(&table),
                last_use: AtomicU64::new(stamp),
            },
        );
        Ok(table)
    }

    /// [`TableCache::table`] for several files at once: slot `i` of `out` receives the table
    /// of `numbers[i]` (or the error opening it) where that is `Some`, and `None` elsewhere
    /// (every slot of `out` is written). Hits take the lock once for the batch. Errors stay
    /// in their slots, so a reader that never reaches a damaged table does not fail on it.
    ///
    /// Errors are boxed so a slot stays two words: readers keep a batch of slots per probe.
    pub fn tables(&self, numbers: &[Option<u64>], out: &mut [Option<TableSlot>]) {
        for slot in out.iter_mut() {
            *slot = None;
        }
        if numbers.iter().all(Option::is_none) {
            return;
        }
        let stamp = self.clock.fetch_add(1, Ordering::Relaxed);
        let mut missed = false;
        {
            let tables = self.tables.read();
            for (slot, n) in out.iter_mut().zip(numbers) {
                let Some(n) = n else { continue };
                match tables.get(n) {
                    Some(e) => {
                        e.last_use.store(stamp, Ordering::Relaxed);
                        *slot = Some(Ok(Arc::clone(&e.table)));
                    }
                    None => missed = true,
                }
            }
        }
        if missed {
            for (slot, n) in out.iter_mut().zip(numbers) {
                if let (None, Some(n)) = (&slot, n) {
                    *slot = Some(self.table(*n).map_err(Box::new));
                }
            }
        }
    }

    /// Forget table `file_number` and drop its blocks from the block cache (call when the
    /// file is deleted). Readers holding the table keep it until they drop it.
    pub fn evict(&self, file_number: u64) {
        self.tables.write().remove(&file_number);
        if let Some(c) = &self.block_cache {
            c.erase_file(file_number);
        }
    }

    /// Tables currently open.
    pub fn len(&self) -> usize {
        self.tables.read().len()
    }

    /// True when no table is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The file-count budget.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The block cache tables read through, if any.
    pub fn block_cache(&self) -> Option<&Arc<BlockCache>> {
        self.block_cache.as_ref()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::path::Path;

    use super::*;
    use crate::env::{ReadCause, WriteCause};
    use crate::iter::InternalIterator;
    use crate::key::{ValueKind, make_internal_key, seek_key};
    use crate::options::TableOptions;
    use crate::table::TableBuilder;
    use crate::table::test_fs::TestFs;

    /// Write table `number` holding `k{number}-0000` .. `k{number}-0099` (sequence numbers
    /// 1..=100, values `v`) under `/db`.
    pub(crate) fn write_table(env: &Env, number: u64) {
        let path = Path::new("/db").join(table_file_name(number));
        let f = env.create(&path, WriteCause::Flush).unwrap();
        let mut b = TableBuilder::new(f, &TableOptions::default());
        for i in 0..100u64 {
            let k = make_internal_key(
                format!("k{number}-{i:04}").as_bytes(),
                i + 1,
                ValueKind::Value,
            );
            b.add(&k, b"v").unwrap();
        }
        b.finish().unwrap();
    }

    #[test]
    fn lru_bounded_and_evict_clears_blocks() {
        let (_fs, env) = TestFs::env();
        for n in 1..=3 {
            write_table(&env, n);
        }
        let bc = Arc::new(BlockCache::new(1 << 20));
        let tc = TableCache::new(env, "/db".into(), 2, Some(Arc::clone(&bc)), true);
        let t1 = tc.table(1).unwrap();
        assert_eq!(t1.path(), Path::new("/db/000001.sst"));
        let t2 = tc.table(2).unwrap();
        assert!(Arc::ptr_eq(&t1, &tc.table(1).unwrap()));
        // 2 is now the least recently used
        tc.table(3).unwrap();
        assert_eq!(tc.len(), 2);
        assert!(Arc::ptr_eq(&t1, &tc.table(1).unwrap()));
        assert!(!Arc::ptr_eq(&t2, &tc.table(2).unwrap()));
        assert_eq!(tc.len(), 2);

        let got = t1
            .get(b"k1-0005", &seek_key(b"k1-0005", 100), ReadCause::Get)
            .unwrap();
        assert_eq!(got.unwrap().1, b"v");
        let mut it = t1.iter(ReadCause::Scan);
        it.seek_to_first().unwrap();
        assert!(bc.usage() > 0);
        tc.evict(1);
        assert_eq!(bc.usage(), 0);
        // the evicted table still works for its holder, and reopens on demand
        assert!(it.valid());
        assert!(!Arc::ptr_eq(&t1, &tc.table(1).unwrap()));
    }

    #[test]
    fn batch_lookup_fills_asked_slots_and_opens_misses() {
        let (_fs, env) = TestFs::env();
        for n in 1..=3 {
            write_table(&env, n);
        }
        let tc = TableCache::new(env, "/db".into(), 10, None, true);
        let t2 = tc.table(2).unwrap();
        let mut out: [Option<TableSlot>; 5] = Default::default();
        out[1] = Some(Ok(Arc::clone(&t2)));
        out[4] = Some(Ok(Arc::clone(&t2)));
        // A hit (2), a miss that opens (3), a missing file (9) failing in its own slot, and
        // every other slot cleared, even past the numbers given.
        tc.tables(&[Some(2), None, Some(3), Some(9)], &mut out);
        assert!(matches!(&out[0], Some(Ok(t)) if Arc::ptr_eq(t, &t2)));
        assert!(out[1].is_none() && out[4].is_none());
        assert!(matches!(&out[2], Some(Ok(t)) if t.path() == Path::new("/db/000003.sst")));
        assert!(matches!(&out[3], Some(Err(_))));
        assert_eq!(tc.len(), 2);
        tc.tables(&[Some(1)], &mut out);
        assert!(matches!(&out[0], Some(Ok(_))));
        assert_eq!(tc.len(), 3);
    }

    #[test]
    fn failures_are_not_cached() {
        let (fs, env) = TestFs::env();
        let tc = TableCache::new(env.clone(), "/db".into(), 10, None, true);
        assert!(tc.table(9).is_err());
        fs.set(Path::new("/db/000009.sst"), b"not a table".to_vec());
        assert!(tc.table(9).unwrap_err().is_corruption());
        write_table(&env, 9);
        assert_eq!(tc.table(9).unwrap().properties().num_entries, 100);
        assert_eq!(tc.len(), 1);
    }
}
