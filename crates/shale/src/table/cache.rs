//! The table cache: open tables, bounded by a file-count budget, least recently used first
//! out.
//!
//! Tables are opened through the store's [`TableFormat`] and held as trait objects. An entry
//! is one generation of a file ([`TableId`]: number and committed size): asking for another
//! size of the same number is a miss that opens the file again and replaces the entry, so a
//! table that grew is re-read while readers of the old generation keep theirs.
//!
//! A hit takes a shared lock and bumps an atomic use stamp, so concurrent readers do not
//! serialize on it. A miss opens the table without holding the lock (the open reads the
//! format's metadata) and then inserts it; two threads missing on the same file at once may
//! both open it, and the second insert keeps the first table.
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
use crate::table::format::{
    TableFormat, TableId, TableIdentity, TableReadOptions, TableReader, check_identity,
};
use crate::table::table_file_name;

struct Entry {
    size: u64,
    table: Arc<dyn TableReader>,
    last_use: AtomicU64,
}

/// A table of a batch lookup ([`TableCache::tables`]), or the error opening it.
pub type TableSlot = std::result::Result<Arc<dyn TableReader>, Box<crate::Error>>;

/// Open tables of one store, keyed by file number (one generation each). See the module
/// docs.
pub struct TableCache {
    env: Env,
    dir: PathBuf,
    capacity: usize,
    format: Arc<dyn TableFormat>,
    read: TableReadOptions,
    /// The store's id: tables are written recording it and opened only if they record it
    /// (or nothing). `None` outside a store (tests of the parts).
    store_id: Option<u64>,
    tables: RwLock<HashMap<u64, Entry, crate::cache::IntHashBuilder>>,
    clock: AtomicU64,
    /// Open tables through a memory map of their committed bytes (`Options::mmap_reads`).
    mmap_reads: bool,
}

impl std::fmt::Debug for TableCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableCache")
            .field("dir", &self.dir)
            .field("format", &self.format.name())
            .field("capacity", &self.capacity)
            .field("open", &self.len())
            .finish()
    }
}

impl TableCache {
    /// A cache of at most `max_open_files` tables (at least 1) of `format` from `dir`.
    /// Tables read data blocks through `block_cache` and check block checksums if
    /// `verify_checksums`. `store_id` is the store's id (see [`TableCache::identity`]).
    pub fn new(
        env: Env,
        dir: PathBuf,
        max_open_files: usize,
        format: Arc<dyn TableFormat>,
        block_cache: Option<Arc<BlockCache>>,
        verify_checksums: bool,
        store_id: Option<u64>,
    ) -> TableCache {
        TableCache {
            env,
            dir,
            capacity: max_open_files.max(1),
            format,
            read: TableReadOptions {
                block_cache,
                verify_checksums,
            },
            store_id,
            tables: RwLock::new(HashMap::default()),
            clock: AtomicU64::new(0),
            mmap_reads: false,
        }
    }

    /// This cache, opening tables for reads from a memory map of each one's committed
    /// bytes ([`Env::open_mapped`]) when `on` (`Options::mmap_reads`), else for `pread`.
    /// A table file is immutable below its committed size once a version names it, which
    /// is what a map needs (`UNSAFE.md`); the file system falls back to `pread` where it
    /// cannot map.
    #[must_use]
    pub fn with_mmap_reads(mut self, on: bool) -> TableCache {
        self.mmap_reads = on;
        self
    }

    /// What table file `number`, which no version lists, records as its identity if that
    /// proves it is not this store's: a complete table that records another store's id or
    /// another file number ([`TableFormat::identity`]). `None` for a table in the cache (it
    /// is this store's: it was checked when it was opened) and for a file that cannot be
    /// read as a table (crash debris: a table cut short) or records no identity, which
    /// cannot be told apart from the store's own.
    pub fn foreign(&self, number: u64) -> Option<TableIdentity> {
        if self.tables.read().contains_key(&number) {
            return None;
        }
        let path = self.dir.join(table_file_name(number));
        let file = self.env.open(&path).ok()?;
        let id = self.format.identity(file).ok()??;
        (id.number != number || self.store_id.is_some_and(|s| s != id.store_id)).then_some(id)
    }

    /// The store's table format: flush and compaction write through it.
    pub fn format(&self) -> &Arc<dyn TableFormat> {
        &self.format
    }

    /// What a new table `number` of this store records as its identity (`None` outside a
    /// store): flush and compaction write it through [`TableFormat::builder`].
    pub fn identity(&self, number: u64) -> Option<TableIdentity> {
        self.store_id
            .map(|store_id| TableIdentity { store_id, number })
    }

    /// The open table `id`, opening generation `id.size` of `{dir}/{id.number:06}.sst` on
    /// a miss. A table that records another file number or another store's id
    /// ([`check_identity`]) is not opened.
    ///
    /// # Errors
    /// I/O errors opening the file; [`crate::Error::Corruption`] from the format's checks
    /// and the identity check. Failures are not cached: the next call tries again.
    pub fn table(&self, id: TableId) -> Result<Arc<dyn TableReader>> {
        let stamp = self.clock.fetch_add(1, Ordering::Relaxed);
        if let Some(e) = self.tables.read().get(&id.number)
            && e.size == id.size
        {
            e.last_use.store(stamp, Ordering::Relaxed);
            return Ok(Arc::clone(&e.table));
        }
        let path = self.dir.join(table_file_name(id.number));
        let file = if self.mmap_reads {
            self.env
                .open_mapped(&path, id.size, crate::env::MapUse::Immutable)?
        } else {
            self.env.open(&path)?
        };
        let table = self.format.open(file, id, &self.read)?;
        check_identity(table.as_ref(), id.number, self.store_id)?;
        let mut tables = self.tables.write();
        if let Some(e) = tables.get(&id.number)
            && e.size == id.size
        {
            return Ok(Arc::clone(&e.table));
        }
        // Another generation of the same file gives way without counting as an eviction.
        tables.remove(&id.number);
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
            id.number,
            Entry {
                size: id.size,
                table: Arc::clone(&table),
                last_use: AtomicU64::new(stamp),
            },
        );
        Ok(table)
    }

    /// [`TableCache::table`] for several files at once: slot `i` of `out` receives the table
    /// of `ids[i]` (or the error opening it) where that is `Some`, and `None` elsewhere
    /// (every slot of `out` is written). Hits take the lock once for the batch. Errors stay
    /// in their slots, so a reader that never reaches a damaged table does not fail on it.
    ///
    /// Errors are boxed so a slot stays two words: readers keep a batch of slots per probe.
    pub fn tables(&self, ids: &[Option<TableId>], out: &mut [Option<TableSlot>]) {
        for slot in out.iter_mut() {
            *slot = None;
        }
        if ids.iter().all(Option::is_none) {
            return;
        }
        let stamp = self.clock.fetch_add(1, Ordering::Relaxed);
        let mut missed = false;
        {
            let tables = self.tables.read();
            for (slot, id) in out.iter_mut().zip(ids) {
                let Some(id) = id else { continue };
                match tables.get(&id.number) {
                    Some(e) if e.size == id.size => {
                        e.last_use.store(stamp, Ordering::Relaxed);
                        *slot = Some(Ok(Arc::clone(&e.table)));
                    }
                    _ => missed = true,
                }
            }
        }
        if missed {
            for (slot, id) in out.iter_mut().zip(ids) {
                if let (None, Some(id)) = (&slot, id) {
                    *slot = Some(self.table(*id).map_err(Box::new));
                }
            }
        }
    }

    /// The open table `id` if this cache holds that generation of it, without opening
    /// anything (a secondary handle's catch-up hands the tables it already holds to its
    /// next view instead of opening them again).
    pub fn cached(&self, id: TableId) -> Option<Arc<dyn TableReader>> {
        let tables = self.tables.read();
        let e = tables.get(&id.number)?;
        (e.size == id.size).then(|| Arc::clone(&e.table))
    }

    /// Hold `table`, an open generation `id` of one of this store's tables taken from
    /// another cache of the same store ([`TableCache::cached`]), as if this cache had
    /// opened it. Nothing is evicted for it: a cache being filled for a new view stops
    /// adopting at its capacity.
    pub fn adopt(&self, id: TableId, table: Arc<dyn TableReader>) {
        let mut tables = self.tables.write();
        if tables.len() >= self.capacity && !tables.contains_key(&id.number) {
            return;
        }
        let stamp = self.clock.fetch_add(1, Ordering::Relaxed);
        tables.insert(
            id.number,
            Entry {
                size: id.size,
                table,
                last_use: AtomicU64::new(stamp),
            },
        );
    }

    /// Forget table `file_number` and drop its blocks from the block cache (call when the
    /// file is deleted). Readers holding the table keep it until they drop it.
    pub fn evict(&self, file_number: u64) {
        self.tables.write().remove(&file_number);
        if let Some(c) = &self.read.block_cache {
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
        self.read.block_cache.as_ref()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::path::Path;

    use super::*;
    use crate::env::{ReadCause, WriteCause};
    use crate::key::{ValueKind, make_internal_key, seek_key};
    use crate::options::TableOptions;
    use crate::table::test_fs::TestFs;
    use crate::table::{SstFormat, TableBuilder};

    /// Write table `number` holding `k{number}-0000` .. `k{number}-{n-1:04}` (sequence
    /// numbers 1..=n, values `v`) under `/db`; returns its id.
    pub(crate) fn write_table_of(env: &Env, number: u64, n: u64) -> TableId {
        write_table_in(env, Path::new("/db"), number, n)
    }

    /// [`write_table_of`] in `dir`.
    fn write_table_in(env: &Env, dir: &Path, number: u64, n: u64) -> TableId {
        let path = dir.join(table_file_name(number));
        let f = env.create(&path, WriteCause::Flush).unwrap();
        let mut b = TableBuilder::new(f, &TableOptions::default());
        for i in 0..n {
            let k = make_internal_key(
                format!("k{number}-{i:04}").as_bytes(),
                i + 1,
                ValueKind::Value,
            );
            b.add(&k, b"v").unwrap();
        }
        let size = b.finish().unwrap().size;
        TableId { number, size }
    }

    /// [`write_table_of`] with 100 entries.
    pub(crate) fn write_table(env: &Env, number: u64) -> TableId {
        write_table_of(env, number, 100)
    }

    fn cache(env: Env, capacity: usize, bc: Option<Arc<BlockCache>>) -> TableCache {
        TableCache::new(
            env,
            "/db".into(),
            capacity,
            Arc::new(SstFormat),
            bc,
            true,
            None,
        )
    }

    #[test]
    fn lru_bounded_and_evict_clears_blocks() {
        let (_fs, env) = TestFs::env();
        let ids: Vec<TableId> = (1..=3).map(|n| write_table(&env, n)).collect();
        let bc = Arc::new(BlockCache::new(1 << 20));
        let tc = cache(env, 2, Some(Arc::clone(&bc)));
        let t1 = tc.table(ids[0]).unwrap();
        assert_eq!(t1.path(), Path::new("/db/000001.sst"));
        let t2 = tc.table(ids[1]).unwrap();
        assert!(Arc::ptr_eq(&t1, &tc.table(ids[0]).unwrap()));
        // 2 is now the least recently used
        tc.table(ids[2]).unwrap();
        assert_eq!(tc.len(), 2);
        assert!(Arc::ptr_eq(&t1, &tc.table(ids[0]).unwrap()));
        assert!(!Arc::ptr_eq(&t2, &tc.table(ids[1]).unwrap()));
        assert_eq!(tc.len(), 2);

        let got = t1
            .lookup(
                b"k1-0005",
                &seek_key(b"k1-0005", 100),
                ReadCause::Get.into(),
            )
            .unwrap();
        assert_eq!(got.unwrap().1, b"v");
        let mut it = Arc::clone(&t1).iter(ReadCause::Scan.into());
        it.seek_to_first().unwrap();
        assert!(bc.usage() > 0);
        tc.evict(1);
        assert_eq!(bc.usage(), 0);
        // the evicted table still works for its holder, and reopens on demand
        assert!(it.valid());
        assert!(!Arc::ptr_eq(&t1, &tc.table(ids[0]).unwrap()));
    }

    #[test]
    fn batch_lookup_fills_asked_slots_and_opens_misses() {
        let (_fs, env) = TestFs::env();
        let ids: Vec<TableId> = (1..=3).map(|n| write_table(&env, n)).collect();
        let tc = cache(env, 10, None);
        let t2 = tc.table(ids[1]).unwrap();
        let mut out: [Option<TableSlot>; 5] = Default::default();
        out[1] = Some(Ok(Arc::clone(&t2)));
        out[4] = Some(Ok(Arc::clone(&t2)));
        // A hit (2), a miss that opens (3), a missing file (9) failing in its own slot, and
        // every other slot cleared, even past the ids given.
        let missing = TableId {
            number: 9,
            size: 100,
        };
        tc.tables(&[Some(ids[1]), None, Some(ids[2]), Some(missing)], &mut out);
        assert!(matches!(&out[0], Some(Ok(t)) if Arc::ptr_eq(t, &t2)));
        assert!(out[1].is_none() && out[4].is_none());
        assert!(matches!(&out[2], Some(Ok(t)) if t.path() == Path::new("/db/000003.sst")));
        assert!(matches!(&out[3], Some(Err(_))));
        assert_eq!(tc.len(), 2);
        tc.tables(&[Some(ids[0])], &mut out);
        assert!(matches!(&out[0], Some(Ok(_))));
        assert_eq!(tc.len(), 3);
    }

    #[test]
    fn failures_are_not_cached() {
        let (fs, env) = TestFs::env();
        let tc = cache(env.clone(), 10, None);
        let id = TableId {
            number: 9,
            size: 11,
        };
        assert!(tc.table(id).is_err());
        fs.set(Path::new("/db/000009.sst"), b"not a table".to_vec());
        assert!(tc.table(id).unwrap_err().is_corruption());
        let id = write_table(&env, 9);
        assert_eq!(tc.table(id).unwrap().properties().num_entries, 100);
        assert_eq!(tc.len(), 1);
    }

    /// With `mmap_reads` on the real file system, a table is read from a map of its
    /// committed bytes, and keeps reading after its file is deleted (a compaction removes
    /// tables that readers may still hold) until the last holder drops it; a generation
    /// longer than the file is corruption naming it, as with `pread`; without the option
    /// nothing is mapped.
    #[test]
    fn mapped_tables_read_after_their_file_is_deleted() {
        use crate::env::posix::PosixFs;
        let dir = std::env::temp_dir().join(format!("shale-cache-mmap-{}", std::process::id()));
        let fs = PosixFs::with_map_limit(100);
        let env = Env::new(Arc::new(fs.clone()));
        env.fs().create_dir_all(&dir).unwrap();
        let id = write_table_in(&env, &dir, 7, 500);
        let mapped = |on| {
            TableCache::new(
                env.clone(),
                dir.clone(),
                10,
                Arc::new(SstFormat),
                None,
                true,
                None,
            )
            .with_mmap_reads(on)
        };
        let tc = mapped(true);
        let t = tc.table(id).unwrap();
        assert_eq!(fs.mapped_files(), 1);
        env.fs().remove_file(&dir.join(table_file_name(7))).unwrap();
        tc.evict(7);
        let got = t
            .lookup(
                b"k7-0321",
                &seek_key(b"k7-0321", 1000),
                ReadCause::Get.into(),
            )
            .unwrap();
        assert_eq!(got.unwrap().1, b"v");
        let mut it = Arc::clone(&t).iter(ReadCause::Scan.into());
        it.seek_to_first().unwrap();
        let mut n = 0;
        while it.valid() {
            n += 1;
            it.next().unwrap();
        }
        assert_eq!(n, 500);
        t.verify().unwrap();
        drop((it, t));
        assert_eq!(fs.mapped_files(), 0, "the map goes with its last holder");
        assert!(tc.table(id).is_err(), "the file is gone");

        let id = write_table_in(&env, &dir, 8, 50);
        assert_longer_generation_is_corruption(&tc, id);
        assert_eq!(fs.mapped_files(), 0);
        let plain = mapped(false);
        assert_eq!(plain.table(id).unwrap().properties().num_entries, 50);
        assert_eq!(fs.mapped_files(), 0);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A new generation of a file (another committed size) is a miss that replaces the
    /// cached one; a holder of the old generation keeps reading it; a generation longer
    /// than the file is corruption naming the file.
    #[test]
    fn another_generation_of_a_file_is_a_miss() {
        let (_fs, env) = TestFs::env();
        let small = write_table_of(&env, 4, 10);
        let tc = cache(env.clone(), 10, None);
        let old = tc.table(small).unwrap();
        assert_eq!(old.file_size(), small.size);
        // The same number, rewritten larger: the cache must not answer with the old table.
        let big = write_table_of(&env, 4, 50);
        assert_ne!(big.size, small.size);
        let new = tc.table(big).unwrap();
        assert!(!Arc::ptr_eq(&old, &new));
        assert_eq!(new.properties().num_entries, 50);
        assert_eq!(tc.len(), 1);
        assert!(Arc::ptr_eq(&new, &tc.table(big).unwrap()));
        assert_eq!(old.properties().num_entries, 10);
        assert_longer_generation_is_corruption(&tc, big);
    }

    /// Generation `id` one byte longer than its file is corruption naming the file.
    fn assert_longer_generation_is_corruption(tc: &TableCache, id: TableId) {
        let beyond = TableId {
            number: id.number,
            size: id.size + 1,
        };
        let err = tc.table(beyond).unwrap_err();
        assert!(err.is_corruption(), "{err}");
        let name = table_file_name(id.number);
        assert!(err.to_string().contains(&name), "{name}: {err}");
    }
}
