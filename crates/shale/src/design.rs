//! The one place that wires axis choices together: from [`Options`] to the parts a store is
//! built from. The engine (`db/`) takes the wiring as an argument and never names a design;
//! each design lives in its axis folder behind its trait. A new design plugs in here: one
//! arm per axis it adds.
//!
//! | axis | option | implementations |
//! |---|---|---|
//! | memory component | [`Options::memory`] | `skiplist` ([`crate::memory::skiplist`]), `flodb` ([`crate::memory::flodb`]) |
//! | value placement | [`Options::values`] | `inline` ([`crate::values::inline`]), `vlog` ([`crate::values::vlog`]) |
//! | layout | [`Options::layout`] | `leveled` ([`crate::layout::leveled`]), `flsm` ([`crate::layout::flsm`]), `trie` ([`crate::layout::trie`]), `lwc` ([`crate::layout::lwc`]) |
//! | table format | [`Options::table_format`] (must be the layout's) | `sst` ([`crate::table::sst`]), `htable` ([`crate::table::htable`]), `dtable` ([`crate::table::dtable`]) |

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use crate::db::{Db, Parts, RepairReport, VerifyReport};
use crate::error::Result;
use crate::layout::{Layout, flsm::Flsm, leveled::Leveled, lwc::Lwc, trie::Trie};
use crate::memory::flodb::{FloDbConfig, FloDbMemory};
use crate::memory::{MemoryComponent, skiplist::SkipListMemory};
use crate::options::{Axes, LayoutKind, MemoryKind, Options, TableKind, ValuesKind};
use crate::table::htable::HTableFormat;
use crate::table::{DTableFormat, SstFormat, TableFormat};
use crate::values::{InlinePlacement, ValueStore, VlogPlacement};

/// The parts of the store in `dir` as `options` choose them; `file_numbers` is the store's
/// file-number counter (logs draw from it).
pub(crate) fn parts(options: &Options, dir: &Path, file_numbers: Arc<AtomicU64>) -> Parts {
    let layout: Arc<dyn Layout> = match options.layout {
        LayoutKind::Leveled => Arc::new(Leveled::new(options)),
        LayoutKind::Flsm => Arc::new(Flsm::new(options)),
        LayoutKind::Trie => Arc::new(Trie::new(options)),
        LayoutKind::Lwc => Arc::new(Lwc::new(options)),
    };
    let values: Arc<dyn ValueStore> = match options.values {
        ValuesKind::Inline => Arc::new(
            InlinePlacement::new(options.env.clone(), dir, file_numbers)
                .with_mmap_log_writes(options.mmap_log_writes),
        ),
        ValuesKind::Vlog => Arc::new(VlogPlacement::new(options, dir, file_numbers)),
    };
    let memory = memory_component(options);
    let table: Arc<dyn TableFormat> = match options.table_format {
        TableKind::Sst => Arc::new(SstFormat),
        TableKind::HTable => Arc::new(HTableFormat),
        TableKind::DTable => Arc::new(DTableFormat),
    };
    Parts {
        layout,
        values,
        memory,
        table,
    }
}

/// The memory component `options` choose (the memory axis's one match).
pub(crate) fn memory_component(options: &Options) -> Arc<dyn MemoryComponent> {
    let bloom = (options.write_buffer_size as f64 * options.memtable_bloom_ratio) as usize;
    match options.memory {
        MemoryKind::SkipList => Arc::new(SkipListMemory::with_bloom(bloom)),
        MemoryKind::FloDb => {
            let f = &options.flodb;
            Arc::new(FloDbMemory::with_config(
                FloDbConfig::sized(
                    options.write_buffer_size,
                    f.membuffer_fraction,
                    f.membuffer_partitions,
                    f.drain_threads,
                )
                .with_bloom(bloom)
                .with_writer_drains(f.writer_drains),
            ))
        }
    }
}

impl Db {
    /// Open (or create) the store in directory `path`.
    ///
    /// # Errors
    /// [`crate::Error::Locked`] if another handle holds the store,
    /// [`crate::Error::Corruption`] if its files are damaged,
    /// [`crate::Error::InvalidArgument`] for bad options (or a store of another design),
    /// [`crate::Error::Io`].
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        Db::open_with(path.as_ref(), options, &parts)
    }

    /// Open the existing store in directory `path` for reading only: a consistent view of
    /// it as it is now, which never changes and changes nothing.
    ///
    /// The store is recovered as [`Db::open`] recovers it, with the same checks (a store
    /// `open` refuses is refused here too), but nothing is written: no `LOCK` is created or
    /// taken, no MANIFEST, log or value-log segment is written or removed, and the
    /// write-ahead log (for the value-log design, the value log after its head) is replayed
    /// into memory only. It works on a directory the process cannot write, and beside a
    /// handle that has the store open for writing, in this process or another: when that
    /// writer commits a flush or compaction while this open reads the store, the open
    /// starts again. The handle then keeps the files of its version open (every table when
    /// there are at most [`Options::max_open_files`], and every live value-log segment), so
    /// a writer deleting them later does not take them away; beyond that limit a table is
    /// opened on first use, and one deleted since fails that read with an error that says
    /// so, never with other data. See `docs/architecture.md` (read-only open).
    ///
    /// Writes, [`Db::flush`], [`Db::compact_range`] and [`Db::run_value_gc`] return
    /// [`crate::Error::ReadOnlyOpen`]. `create_if_missing` and `error_if_exists` are
    /// ignored. A torn tail dropped from the log is counted in
    /// [`crate::Stats::placement`] (`wal_bytes_dropped`), as for `open`.
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] when there is no store at `path` or for bad options
    /// (or a store of another design), [`crate::Error::Corruption`] if its files are
    /// damaged, [`crate::Error::Io`] (also when the store kept changing under a writer's
    /// commits through every attempt).
    ///
    /// # Examples
    /// ```
    /// use shale::{Db, Options, env::Env};
    /// let options = Options::default().with_env(Env::memory());
    /// let db = Db::open("/db", options.clone())?;
    /// db.put(b"hello", b"world")?;
    /// let reader = Db::open_read_only("/db", options)?; // beside the writer
    /// assert_eq!(reader.get(b"hello")?.as_deref(), Some(&b"world"[..]));
    /// assert!(matches!(reader.put(b"x", b"y"), Err(shale::Error::ReadOnlyOpen { .. })));
    /// # Ok::<(), shale::Error>(())
    /// ```
    pub fn open_read_only(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        Db::open_read_only_with(path.as_ref(), options, &parts)
    }

    /// Open the existing store in directory `path` as a *secondary* handle: a read-only
    /// handle ([`Db::open_read_only`], with everything said there) whose view moves forward
    /// when [`Db::try_catch_up`] is called, to what a writer (in this process or another)
    /// has committed and logged by then, as RocksDB's secondary instance and its
    /// `TryCatchUpWithPrimary`. Between catch-ups the view does not change.
    ///
    /// Each catch-up recovers the store as a read-only open does (the whole MANIFEST, the
    /// log replayed into memory), reusing the tables the handle holds open, and installs the
    /// result at once; it is safe while the writer flushes, compacts and deletes files (a
    /// catch-up that meets the writer's commits starts again, and one that fails leaves the
    /// view as it was). Iterators and snapshots taken before a catch-up keep reading the
    /// view they were taken on. Writes and the other changes return
    /// [`crate::Error::ReadOnlyOpen`]. See `docs/architecture.md` (secondary open).
    ///
    /// # Errors
    /// As [`Db::open_read_only`].
    ///
    /// # Examples
    /// ```
    /// use shale::{Db, Options, env::Env};
    /// let options = Options::default().with_env(Env::memory());
    /// let db = Db::open("/db", options.clone())?;
    /// db.put(b"a", b"1")?;
    /// let follower = Db::open_secondary("/db", options)?;
    /// db.put(b"b", b"2")?;
    /// assert_eq!(follower.get(b"b")?, None); // not caught up yet
    /// follower.try_catch_up()?;
    /// assert_eq!(follower.get(b"b")?.as_deref(), Some(&b"2"[..]));
    /// # Ok::<(), shale::Error>(())
    /// ```
    pub fn open_secondary(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        Db::open_secondary_with(path.as_ref(), options, parts)
    }
}

/// Answer "would [`Db::open`] succeed, and return exactly the committed data?" for the
/// store at `path`, without changing it: recover it as [`Db::open_read_only`] does (the
/// recovery of `open`: CURRENT, the MANIFEST replayed, every table it lists present, the
/// write-ahead log replayed with the same checks), then read every table of the recovered
/// version in full (each block's checksum, key order) and the value placement's own files
/// (for a value log, every live segment's records, and every value pointer of a live
/// table: it must name a record in a live segment holding its key). Files the MANIFEST
/// does not name (a table a crash left half-written, a user's `notes.vlog`) are not the
/// store's and are not read. The store is checked as the design that wrote it (its options
/// record, or for an older store its format tag), whatever design `options` name; their
/// other settings (the file system, the WAL recovery mode) are used. Takes no lock and writes nothing; beside a
/// writer in another process it checks one consistent version.
///
/// A store that opens but whose log ends in a torn tail open would drop is `Ok`, with the
/// bytes in [`VerifyReport::placement`] (`log_bytes_dropped`).
///
/// # Errors
/// As `open` would fail, and the first problem the reads find: [`crate::Error::Corruption`]
/// naming the file and offset, or [`crate::Error::Io`]; [`crate::Error::InvalidArgument`]
/// for a directory without a store or a store written by a design this build does not
/// have.
pub fn verify(path: impl AsRef<Path>, options: Options) -> Result<VerifyReport> {
    let dir = path.as_ref();
    let options = match crate::db::describe(dir, &options.env)? {
        Some(d) => stored_options(d, options)?,
        None => options,
    };
    crate::db::verify_with(dir, options, &parts)
}

/// Repair the store in `path` as LevelDB's `RepairDB` does: rebuild its MANIFEST and
/// CURRENT from the files in the directory, keeping every table and log record that reads.
///
/// Every table is read in full; one that fails its checks, belongs to another store, or
/// (for a value log) holds a pointer to a record its segment does not hold is moved into
/// `path/lost/` and reported with its key range: the newest versions of those keys may be
/// lost. The entries of every log (write-ahead log or value log) that the tables do not
/// hold are written into new tables; a log's torn or damaged tail is dropped with what
/// follows it in that log. Every table goes to level 0 (tables whose key and sequence
/// ranges overlap, which level 0 cannot order, are merged first), so every layout reads
/// the newest version of each key; the next open compacts them down. A new MANIFEST and
/// CURRENT are written last; converted logs, merged tables and the old MANIFESTs then go to
/// `lost/` too. Repair never deletes a file of the store: what it cannot use, or no longer
/// needs, is in `lost/`. Value-log segments stay where they are (the tables point into
/// them). See `docs/reliability.md` ("Repair") for what is and is not recovered.
///
/// The store is repaired as the design that wrote it: its options record, read from the
/// newest MANIFEST that reads (whether CURRENT names it or not); without one (every
/// MANIFEST lost or damaged), as `options` say, and the repaired store records them. Their
/// other settings (the file system, sizes) are used. Takes the store's lock.
///
/// # Errors
/// [`crate::Error::Locked`] while a handle has the store open;
/// [`crate::Error::InvalidArgument`] for a directory without store files, or when no
/// MANIFEST says how the store was made and its files do not fit `options` (tables that
/// none read in their table format, logs of another value placement): nothing is changed
/// then; [`crate::Error::Io`]. A failure before the new CURRENT leaves the old files
/// (minus what was moved to `lost/`) and can be repaired again.
pub fn repair(path: impl AsRef<Path>, options: Options) -> Result<RepairReport> {
    let dir = path.as_ref();
    let options = match crate::db::describe_for_repair(dir, &options.env)? {
        Some(d) => stored_options(d, options)?,
        None => options,
    };
    crate::db::repair_with(dir, options, &parts)
}

/// The options the store in `path` was created with (its options record): `base` with the
/// choice on each axis and every option that shapes the store's files (table, level and
/// value-log sizes, bloom bits, compression, FLSM guards) replaced by the recorded ones,
/// and the rest (file system, caches, threads, `create_if_missing`) kept, as RocksDB's
/// `LoadLatestOptions`. Opening with the result never conflicts with the store. A store
/// written before options records existed gives its design's axes (from its format tag)
/// over `base`.
///
/// ```no_run
/// let options = shale::load_options("/tmp/store", shale::Options::default())?;
/// let db = shale::Db::open("/tmp/store", options)?;
/// # Ok::<(), shale::Error>(())
/// ```
///
/// # Errors
/// [`crate::Error::InvalidArgument`] when `path` holds no store or its record names a
/// choice this build does not have; [`crate::Error::Corruption`] for a damaged CURRENT,
/// MANIFEST or record; [`crate::Error::Io`].
pub fn load_options(path: impl AsRef<Path>, base: Options) -> Result<Options> {
    let dir = path.as_ref();
    match crate::db::describe(dir, &base.env)? {
        Some(d) => stored_options(d, base),
        None => Err(crate::Error::InvalidArgument(format!(
            "no store at {}: CURRENT is missing",
            dir.display()
        ))),
    }
}

/// `base` as the store described by `d` was made: its options record, or for an older
/// store its format tag's axes.
fn stored_options(d: crate::db::Description, base: Options) -> Result<Options> {
    match (d.options, d.format_tag) {
        (Some(record), _) => record.apply(base),
        (None, Some(tag)) => options_for_tag(&tag, base),
        (None, None) => Ok(base),
    }
}

/// `options` with the axes of the design whose format tag is `tag`: the caller's own first
/// (its tuning kept), else the first valid combination that writes that tag.
fn options_for_tag(tag: &str, options: Options) -> Result<Options> {
    let candidates = std::iter::once(options.axes()).chain(Axes::all());
    for axes in candidates {
        let o = options.clone().with_axes(axes);
        let p = parts(&o, Path::new(""), Arc::new(AtomicU64::new(0)));
        if crate::db::format_tag(p.layout.as_ref(), p.values.as_ref()) == tag {
            return Ok(o);
        }
    }
    Err(crate::Error::InvalidArgument(format!(
        "the store was written by a design this build does not have (format tag {tag:?})"
    )))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use parking_lot::Mutex;

    use super::*;
    use crate::env::Env;
    use crate::iter::InternalIterator;
    use crate::key::{SeqNo, ValueKind};
    use crate::manifest::{Axis, AxisRecord};
    use crate::memory::{MemLookup, MemTable, MemoryServices, skiplist::SkipListMemTable};

    type Staged = (Vec<u8>, SeqNo, ValueKind, Vec<u8>);

    /// A memtable that stages inserts in an unsorted buffer and moves them into its
    /// skiplist only when sealed, as FloDB's membuffer does in its drain. Its `iter` yields
    /// the skiplist alone: a flush of a memtable the engine did not seal would lose the
    /// staged writes (so the test below can fail). Gets see both.
    #[derive(Default)]
    struct StagedTable {
        buffer: Mutex<Vec<Staged>>,
        list: Arc<SkipListMemTable>,
    }

    impl MemTable for StagedTable {
        fn insert(&self, key: &[u8], seq: SeqNo, kind: ValueKind, value: &[u8]) {
            self.buffer
                .lock()
                .push((key.to_vec(), seq, kind, value.to_vec()));
        }
        fn get(&self, key: &[u8], snapshot: SeqNo) -> Option<MemLookup> {
            let buffer = self.buffer.lock();
            let staged = buffer
                .iter()
                .filter(|(k, s, _, _)| k == key && *s <= snapshot)
                .max_by_key(|(_, s, _, _)| *s);
            match staged {
                Some((_, _, ValueKind::Delete, _)) => Some(MemLookup::Deleted),
                Some((_, _, kind, v)) => Some(MemLookup::Found(*kind, v.clone())),
                None => self.list.get(key, snapshot),
            }
        }
        fn iter(self: Arc<Self>) -> Box<dyn InternalIterator> {
            MemTable::iter(Arc::clone(&self.list))
        }
        fn approximate_bytes(&self) -> usize {
            let staged: usize = self
                .buffer
                .lock()
                .iter()
                .map(|(k, _, _, v)| k.len() + v.len() + 16)
                .sum();
            staged + self.list.approximate_bytes()
        }
        fn len(&self) -> usize {
            self.buffer.lock().len() + self.list.len()
        }
        fn seal(&self) {
            for (k, s, kind, v) in self.buffer.lock().drain(..) {
                self.list.insert(&k, s, kind, &v);
            }
        }
    }

    /// The memory component of [`StagedTable`]s; it records what the engine gives it.
    #[derive(Default)]
    struct StagedMemory {
        services: Mutex<Option<MemoryServices>>,
        made: AtomicUsize,
        stopped: AtomicBool,
    }

    impl MemoryComponent for StagedMemory {
        fn new_memtable(&self) -> Arc<dyn MemTable> {
            self.made.fetch_add(1, Ordering::Relaxed);
            Arc::new(StagedTable::default())
        }
        fn start(&self, services: MemoryServices) -> Result<()> {
            *self.services.lock() = Some(services);
            Ok(())
        }
        fn stop(&self) {
            self.stopped.store(true, Ordering::Relaxed);
        }
    }

    fn key(i: u32) -> Vec<u8> {
        format!("key{i:06}").into_bytes()
    }

    /// The engine seals every memtable before it flushes it (at runtime and in recovery),
    /// starts the component's work with the oldest snapshot, and stops it at close.
    #[test]
    fn the_engine_seals_memtables_and_serves_the_memory_component() {
        let memory = Arc::new(StagedMemory::default());
        let wiring = {
            let memory = Arc::clone(&memory);
            move |o: &Options, d: &Path, n: Arc<AtomicU64>| {
                let mut p = parts(o, d, n);
                p.memory = Arc::clone(&memory) as Arc<dyn MemoryComponent>;
                p
            }
        };
        let mut options = Options::default().with_env(Env::memory());
        options.write_buffer_size = 16 << 10;
        let db = Db::open_with(Path::new("/db"), options.clone(), &wiring).unwrap();
        let oldest = {
            let services = memory.services.lock();
            Arc::clone(&services.as_ref().unwrap().oldest_snapshot)
        };
        db.put(b"first", b"1").unwrap();
        let snapshot = db.snapshot();
        assert_eq!(oldest(), snapshot.sequence());
        for i in 0..3000 {
            db.put(&key(i), &[b'v'; 40]).unwrap();
        }
        assert_eq!(oldest(), snapshot.sequence(), "held snapshot");
        drop(snapshot);
        assert_eq!(oldest(), 3001, "no snapshot: the last published sequence");
        db.flush().unwrap();
        assert!(memory.made.load(Ordering::Relaxed) > 5, "several switches");
        // A write left in the log: recovery replays it into a memtable and flushes it.
        db.put(b"last", b"2").unwrap();
        db.close().unwrap();
        assert!(memory.stopped.load(Ordering::Relaxed));
        let db = Db::open_with(Path::new("/db"), options, &wiring).unwrap();
        // Every key is read from a table: nothing the engine flushed was left staged.
        db.flush().unwrap();
        for i in (0..3000).step_by(7) {
            assert_eq!(db.get(&key(i)).unwrap(), Some(vec![b'v'; 40]), "{i}");
        }
        assert_eq!(db.get(b"first").unwrap(), Some(b"1".to_vec()));
        assert_eq!(db.get(b"last").unwrap(), Some(b"2".to_vec()));
        let scanned = db.iter(crate::db::IterOptions::default()).unwrap().count();
        assert_eq!(scanned, 3002);
        db.close().unwrap();
    }

    /// A durable state of `axis` that counts the records it absorbed (kind 1, payload
    /// empty) and snapshots itself as one record carrying the count (kind 2).
    #[derive(Clone, Debug)]
    struct Counted {
        axis: Axis,
        count: u32,
    }

    impl crate::manifest::AxisState for Counted {
        fn absorb(&mut self, records: &[&AxisRecord]) -> std::result::Result<(), String> {
            for r in records {
                match (r.kind, r.payload.as_slice()) {
                    (1, []) => self.count += 1,
                    (2, [a, b, c, d]) => self.count = u32::from_le_bytes([*a, *b, *c, *d]),
                    _ => return Err(format!("unknown record kind {}", r.kind)),
                }
            }
            Ok(())
        }
        fn snapshot(&self, out: &mut Vec<AxisRecord>) {
            out.push(AxisRecord::new(
                self.axis,
                2,
                self.count.to_le_bytes().to_vec(),
            ));
        }
    }

    #[derive(Debug)]
    struct CountedTables(Arc<dyn crate::table::TableFormat>);

    impl crate::table::TableFormat for CountedTables {
        fn name(&self) -> &'static str {
            self.0.name()
        }
        fn empty_state(&self) -> Box<dyn crate::manifest::AxisState> {
            Box::new(Counted {
                axis: Axis::Table,
                count: 0,
            })
        }
        fn builder(
            &self,
            file: crate::env::WriteFile,
            options: &crate::options::TableOptions,
            identity: Option<crate::table::TableIdentity>,
        ) -> Box<dyn crate::table::TableWriter> {
            self.0.builder(file, options, identity)
        }
        fn open(
            &self,
            file: crate::env::ReadFile,
            id: crate::table::TableId,
            options: &crate::table::TableReadOptions,
        ) -> Result<Arc<dyn crate::table::TableReader>> {
            self.0.open(file, id, options)
        }
    }

    /// The memory component's and the table format's own states are theirs: the version set
    /// replays their MANIFEST records into the states they start (and rewrites them whole in
    /// a new MANIFEST), and a part that keeps no state refuses such a record.
    #[test]
    fn memory_and_table_axes_keep_their_own_durable_state() {
        for axis in [Axis::Memory, Axis::Table] {
            let counted = move |o: &Options, d: &Path, n: Arc<AtomicU64>| {
                let mut p = parts(o, d, n);
                match axis {
                    Axis::Table => p.table = Arc::new(CountedTables(Arc::clone(&p.table))),
                    _ => p.memory = Arc::new(CountedMemory),
                }
                p
            };
            let env = Env::memory();
            let options = Options::default().with_env(env.clone());
            let db = Db::open_with(Path::new("/db"), options.clone(), &counted).unwrap();
            db.put(b"k", b"v").unwrap();
            let state = |db: &Db| {
                db.with_versions(|v, _| {
                    let s = match axis {
                        Axis::Table => &v.axes().table,
                        _ => &v.axes().memory,
                    };
                    s.as_any().downcast_ref::<Counted>().map(|c| c.count)
                })
            };
            for _ in 0..3 {
                let mut edit = crate::manifest::VersionEdit::default();
                edit.records.push(AxisRecord::new(axis, 1, Vec::new()));
                db.with_versions(|v, seq| v.log_and_apply(edit, seq))
                    .unwrap();
            }
            assert_eq!(state(&db), Some(3), "{axis:?}");
            db.close().unwrap();
            // Replayed at open (the open writes a new MANIFEST: the snapshot record), and
            // again from that snapshot.
            for _ in 0..2 {
                let db = Db::open_with(Path::new("/db"), options.clone(), &counted).unwrap();
                assert_eq!(state(&db), Some(3), "{axis:?}");
                assert_eq!(db.get(b"k").unwrap(), Some(b"v".to_vec()));
                db.close().unwrap();
            }
            // The plain parts keep no such state: the store is refused, not half-read.
            let e = Db::open(Path::new("/db"), options).unwrap_err().to_string();
            assert!(e.contains("record"), "{axis:?}: {e}");
        }
    }

    /// The skiplist memory component with a [`Counted`] durable state.
    struct CountedMemory;

    impl MemoryComponent for CountedMemory {
        fn new_memtable(&self) -> Arc<dyn MemTable> {
            Arc::new(SkipListMemTable::new())
        }
        fn empty_state(&self) -> Box<dyn crate::manifest::AxisState> {
            Box::new(Counted {
                axis: Axis::Memory,
                count: 0,
            })
        }
    }
}
