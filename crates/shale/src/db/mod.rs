//! The database handle: open and recover, the write path, the read path, background work.
//!
//! # Threads and locks
//!
//! One `Db` owns one *flush* thread, which turns frozen memtables into level-0 tables, and
//! `max_background_compactions` *compaction workers*, which run the layout's plans side by
//! side. Writers form a queue; the writer at its head (the leader) writes the whole group to
//! the log, then every writer of the group inserts its own batch into the memtable, without
//! a lock and concurrently, and publishes its sequence numbers in order (`db/write.rs`; the
//! only wait between writers outside the locks, `publish_lock`, is for an earlier write to
//! become visible, and no lock is held while waiting there).
//!
//! Locks, always taken in this order (a thread holding one may take only later ones):
//! 1. `wal`: held by the write leader while it logs a group (the mutable memtable and the
//!    sequence numbers handed out; the placement's durability log is only appended to under
//!    it), and by `flush()`. Value-log relocation holds it and waits for the logged writes
//!    to become visible; those writers need no lock to finish, so the wait ends.
//! 2. `versions`: the MANIFEST; held while an edit is committed and its version installed.
//!    It serializes commits: flushes and compactions commit one at a time, each edit applied
//!    to the newest version.
//! 3. `bg`: frozen memtables waiting for flush, the compactions running, background errors,
//!    the condition variable that stalled writers and background threads wait on.
//! 4. `super_version`: what readers clone: memtables plus the current version.
//!
//! `compaction_lock` is held only by a manual compaction (`compact_range`), before any other.
//!
//! A compaction worker picks under `bg`: it hands the layout the current version and a
//! [`crate::layout::PickContext`] built from `BgState::running` (busy input files and the
//! output ranges being written), adds the plan it gets to `running`, and runs it without any
//! lock. Its commit removes it from `running` in the same `bg` critical section that installs
//! the new version, so a picker never sees a plan gone without its result. Its edit is made
//! from an older version than the one it is applied to when others committed meanwhile; it
//! still fits, because it deletes only its own inputs, which were busy all along. A manual
//! compaction sets `BgState::manual` (workers start nothing new), waits until `running` is
//! empty and then runs its plans alone. Files a running compaction reads stay live because
//! it holds a version listing them; the outputs it has written but not committed are in
//! `pending_outputs` (RocksDB's rule), so the obsolete-file sweep, which any thread may run
//! after a commit, deletes neither. The first background failure makes the store read-only:
//! workers then pick nothing, and shutdown joins every thread.
//!
//! Readers take only a read lock on `super_version` for the time of an `Arc` clone.

mod api;
mod background;
mod checkpoint;
mod describe;
mod destroy;
mod open;
#[cfg(test)]
mod parallel_tests;
mod read;
mod read_only;
mod repair;
mod secondary;
mod snapshots;
mod stats;
mod store_files;
#[cfg(test)]
pub(crate) mod testutil;
mod value_jobs;
mod verify;
mod write;
pub(crate) use write::check_entry;

use std::collections::{HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex, RwLock};

pub use api::{
    ForeignTable, IterOptions, LevelStats, LifetimeStats, LiveFile, ReadOptions, Snapshot, Stats,
};
pub use checkpoint::CheckpointInfo;
pub(crate) use describe::{Description, describe};
pub use destroy::destroy_db;
pub(crate) use open::format_tag;
pub use read::{Cursor, DbIterator};
pub use repair::{LOST_DIR, RepairReport, SetAside};
pub(crate) use repair::{describe_for_repair, repair_with};
pub use verify::VerifyReport;
pub(crate) use verify::verify_with;

use crate::cache::block_cache::BlockCache;
use crate::env::{Env, FileLock};
use crate::error::{Error, Result};
use crate::iter::prefetch::{Prefetch, PrefetchPool};
use crate::key::{SeqNo, ValueKind};
use crate::layout::{Layout, Plan};
use crate::memory::{MemTable, MemoryComponent};
use crate::options::{Options, WriteOptions};
use crate::rangedel::RangeDels;
use crate::table::cache::TableCache;
use crate::values::ValueStore;
use crate::version::Version;
use crate::version::set::VersionSet;
use snapshots::SnapshotList;

/// An atomic group of puts and deletes.
pub use crate::wal::WriteBatch;

/// An open store. Share it between threads by reference or in an `Arc`: all methods take
/// `&self`. Dropping it closes the store; [`Db::close`] does the same and reports errors.
///
/// # Examples
/// ```
/// use shale::{Db, Options, env::Env};
/// let db = Db::open("/db", Options::default().with_env(Env::memory()))?;
/// db.put(b"hello", b"world")?;
/// assert_eq!(db.get(b"hello")?.as_deref(), Some(&b"world"[..]));
/// db.close()?;
/// # Ok::<(), shale::Error>(())
/// ```
pub struct Db {
    handle: Handle,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// Resolves separated values ahead of sequential scans; its threads start with the
    /// first scan that submits work and are joined on close.
    prefetch: Arc<PrefetchPool>,
}

/// What a [`Db`] reads and writes through: one state for its lifetime, or the changing
/// view of a secondary handle (`secondary.rs`).
enum Handle {
    Fixed(Arc<DbInner>),
    Follows(Box<secondary::Follow>),
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("path", &self.inner().dir)
            .finish()
    }
}

/// What readers clone: the memtables and the version, consistent with each other.
pub(crate) struct SuperVersion {
    pub(crate) mem: Arc<dyn MemTable>,
    /// Frozen memtables, newest first.
    pub(crate) imms: Vec<Arc<dyn MemTable>>,
    pub(crate) version: Arc<Version>,
    /// The range tombstones of the memtables (logged, not yet flushed): a flush moves
    /// those of its memtable into the version's. Added before their writes are published.
    pub(crate) range_dels: Arc<RangeDels>,
}

impl SuperVersion {
    /// The newest range tombstone covering `key` that a reader at `seq` sees (memtables'
    /// and flushed ones).
    pub(crate) fn max_range_del(&self, key: &[u8], seq: SeqNo) -> Option<SeqNo> {
        let mem = self.range_dels.max_covering(key, seq);
        let flushed = self.version.range_dels().max_covering(key, seq);
        mem.max(flushed)
    }

    /// Whether any range tombstone exists (memtables' or flushed).
    pub(crate) fn has_range_dels(&self) -> bool {
        !self.range_dels.is_empty() || !self.version.range_dels().is_empty()
    }
}

/// The write leader's state (the durability log itself belongs to the value placement).
/// Spins of [`DbInner::wait_published`] before it sleeps: about a microsecond, the time of a
/// few memtable inserts.
const PUBLISH_SPINS: usize = 200;

pub(crate) struct WalState {
    pub(crate) mem: Arc<dyn MemTable>,
    /// The newest sequence number given to a logged write. Writes up to it may still be
    /// inserting into their memtable; `DbInner::last_seq` follows once they are visible.
    pub(crate) last_assigned: SeqNo,
    /// A batch reused by lone `Db::put`s and `Db::delete`s to encode their entry
    /// (`write::log_entry`), so they allocate none.
    pub(crate) scratch: Option<WriteBatch>,
}

/// A frozen memtable and where its writes end in the durability log.
pub(crate) struct Imm {
    pub(crate) mem: Arc<dyn MemTable>,
    pub(crate) log_end: crate::values::LogPosition,
    /// The newest sequence number a write into it was given: once it is published, every
    /// insert into the memtable has finished.
    pub(crate) last_seq: SeqNo,
    /// Its place among the store's freezes, from 1 (`BgState::freezes`).
    pub(crate) freeze_no: u64,
}

/// State shared with the background threads.
#[derive(Default)]
pub(crate) struct BgState {
    /// Frozen memtables, oldest first.
    pub(crate) imms: VecDeque<Imm>,
    /// Set when the layout may have work (a flush or compaction finished, or at open).
    pub(crate) compaction_wanted: bool,
    /// Set while a flush is running: `Db::flush` waits for it.
    pub(crate) flushing: bool,
    /// Frozen memtables so far: the `freeze_no` of the newest.
    pub(crate) freezes: u64,
    /// Frozen memtables up to this `freeze_no` are flushed without waiting for
    /// [`crate::Options::min_memtables_to_merge`] of them: `Db::flush` asked for them, or
    /// the value placement wanted the freeze.
    pub(crate) flush_through: u64,
    /// Every frozen memtable up to this `freeze_no` is flushed, committed and swept (the
    /// flush thread sets it after each flush): what `Db::flush` waits for.
    pub(crate) flushed_through: u64,
    /// When the newest frozen memtable was frozen (`Options::memtable_merge_timeout`).
    pub(crate) last_freeze: Option<std::time::Instant>,
    /// The first background or durability failure: the store is read-only from then on.
    pub(crate) error: Option<String>,
    /// Background compactions committed whose inputs are still being deleted: the store is
    /// not settled until they are (`background::wait_settled`).
    pub(crate) sweeping: usize,
    /// Background compactions in flight, each with its ticket. Their input files and output
    /// ranges are what the picker must avoid.
    pub(crate) running: Vec<(u64, Plan)>,
    /// The ticket of the next background compaction.
    pub(crate) next_ticket: u64,
    /// Set while a manual compaction waits or runs: workers start no new plan.
    pub(crate) manual: bool,
    /// See `background::gate`.
    #[cfg(test)]
    pub(crate) gate: Option<background::gate::Gate>,
}

/// Counters that are not derived from the version.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) user_bytes: AtomicU64,
    pub(crate) user_ops: AtomicU64,
    pub(crate) flushes: AtomicU64,
    pub(crate) compactions: AtomicU64,
    pub(crate) stall_micros: AtomicU64,
    /// Per output level.
    pub(crate) per_level: Mutex<Vec<LevelCounters>>,
}

/// Work done by flushes and compactions that wrote into one level.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LevelCounters {
    /// Bytes of every input.
    pub(crate) read: u64,
    /// Bytes of the inputs that came from shallower levels.
    pub(crate) moved_in: u64,
    /// Bytes written.
    pub(crate) written: u64,
    /// Flushes or compactions.
    pub(crate) count: u64,
}

/// The parts one store is built from, one per axis. The engine never asks which
/// implementation it holds; `crate::design` builds them from the options.
pub(crate) struct Parts {
    pub(crate) layout: Arc<dyn Layout>,
    pub(crate) values: Arc<dyn ValueStore>,
    pub(crate) memory: Arc<dyn MemoryComponent>,
    pub(crate) table: Arc<dyn crate::table::TableFormat>,
}

/// Builds a store's parts from its options, its directory and its file-number counter (the
/// one wiring is `crate::design::parts`; the engine takes it as an argument so that it never
/// names a design).
pub(crate) type Wiring = dyn Fn(&Options, &Path, Arc<AtomicU64>) -> Parts;

pub(crate) struct DbInner {
    pub(crate) dir: PathBuf,
    pub(crate) options: Options,
    pub(crate) env: Env,
    pub(crate) layout: Arc<dyn Layout>,
    pub(crate) values: Arc<dyn ValueStore>,
    /// Makes the empty memtable of every switch, and runs its own background work.
    pub(crate) memory: Arc<dyn MemoryComponent>,
    /// The store's counters since creation as the MANIFEST had them at open, and the
    /// file system's write counters at open: the running count is the one plus what this
    /// process counted since ([`stats::lifetime`]).
    pub(crate) lifetime_base: crate::manifest::Lifetime,
    pub(crate) io_at_open: [u64; crate::env::WriteCause::ALL.len()],
    pub(crate) tables: Arc<TableCache>,
    pub(crate) block_cache: Option<Arc<BlockCache>>,
    pub(crate) snapshots: Arc<SnapshotList>,
    /// The newest sequence number whose write is visible to readers. Published in order
    /// ([`DbInner::publish`]): every write up to it is in its memtable.
    pub(crate) last_seq: AtomicU64,
    /// Writers waiting in [`DbInner::publish`] or [`DbInner::wait_published`] for an earlier
    /// write to become visible, and the lock and condition they sleep on.
    pub(crate) publish_waiters: AtomicUsize,
    pub(crate) publish_lock: Mutex<()>,
    pub(crate) publish_cv: Condvar,
    pub(crate) file_numbers: Arc<AtomicU64>,
    pub(crate) wal: Mutex<WalState>,
    pub(crate) queue: Mutex<write::WriteQueue>,
    pub(crate) versions: Mutex<VersionSet>,
    pub(crate) bg: Mutex<BgState>,
    pub(crate) bg_cv: Condvar,
    pub(crate) super_version: RwLock<Arc<SuperVersion>>,
    /// File numbers drawn for outputs not yet committed: never deleted as obsolete.
    pub(crate) pending_outputs: Mutex<HashSet<u64>>,
    /// The table files of another store the last obsolete-file sweep found and left alone
    /// (`Stats::foreign_tables`).
    pub(crate) foreign_tables: Mutex<Vec<ForeignTable>>,
    /// Held by a manual compaction: two of them take turns.
    pub(crate) compaction_lock: Mutex<()>,
    /// Files a checkpoint in progress copies: never deleted as obsolete meanwhile.
    pub(crate) pins: checkpoint::Pins,
    pub(crate) counters: Counters,
    /// Files the value placement retired, waiting for their readers.
    pub(crate) retired: Mutex<Vec<value_jobs::Retired>>,
    /// Held by a run of the placement's background job (background or manual): one at a
    /// time.
    pub(crate) value_job_lock: Mutex<()>,
    pub(crate) shutting_down: AtomicBool,
    /// Set (after `bg.error`, under the `bg` lock) once the store has turned read-only after
    /// a failure: lets every write check that without taking the `bg` lock.
    pub(crate) failed: AtomicBool,
    pub(crate) lock: Mutex<Option<Box<dyn FileLock>>>,
    /// Opened with `Db::open_read_only`: no writes, no background work, no file changed
    /// (its file system refuses every change, `read_only::ReadOnlyFs`).
    pub(crate) read_only: bool,
}

/// What an open recovered: the state a handle starts from, read-write or read-only.
pub(crate) struct Recovered {
    pub(crate) dir: PathBuf,
    pub(crate) options: Options,
    pub(crate) layout: Arc<dyn Layout>,
    pub(crate) values: Arc<dyn ValueStore>,
    pub(crate) memory: Arc<dyn MemoryComponent>,
    pub(crate) tables: Arc<TableCache>,
    pub(crate) block_cache: Option<Arc<BlockCache>>,
    pub(crate) versions: VersionSet,
    /// The store's counters since creation as the MANIFEST had them.
    pub(crate) lifetime_base: crate::manifest::Lifetime,
    /// The file system's write counters when the open began.
    pub(crate) io_at_open: [u64; crate::env::WriteCause::ALL.len()],
    pub(crate) version: Arc<Version>,
    pub(crate) last_seq: SeqNo,
    /// The mutable memtable.
    pub(crate) mem: Arc<dyn MemTable>,
    /// Frozen memtables, newest first (a read-only open keeps the replayed log in them).
    pub(crate) imms: Vec<Arc<dyn MemTable>>,
    /// The memtables' range tombstones (a read-only open's replayed ones).
    pub(crate) range_dels: Vec<crate::rangedel::RangeTombstone>,
    /// The store's lock (`None` for a read-only handle, which takes none).
    pub(crate) lock: Option<Box<dyn FileLock>>,
    pub(crate) read_only: bool,
}

impl DbInner {
    /// The shared state of a handle that starts from `r`.
    pub(crate) fn new(r: Recovered) -> DbInner {
        DbInner {
            dir: r.dir,
            values: r.values,
            layout: r.layout,
            memory: r.memory,
            lifetime_base: r.lifetime_base,
            io_at_open: r.io_at_open,
            env: r.options.env.clone(),
            tables: r.tables,
            block_cache: r.block_cache,
            snapshots: Arc::default(),
            last_seq: AtomicU64::new(r.last_seq),
            publish_waiters: AtomicUsize::new(0),
            publish_lock: Mutex::new(()),
            publish_cv: Condvar::new(),
            file_numbers: r.versions.file_numbers(),
            wal: Mutex::new(WalState {
                mem: Arc::clone(&r.mem),
                last_assigned: r.last_seq,
                scratch: None,
            }),
            queue: Mutex::default(),
            super_version: RwLock::new(Arc::new(SuperVersion {
                mem: r.mem,
                imms: r.imms,
                version: r.version,
                range_dels: Arc::new(RangeDels::new(r.range_dels)),
            })),
            versions: Mutex::new(r.versions),
            bg: Mutex::new(BgState {
                compaction_wanted: !r.read_only,
                ..BgState::default()
            }),
            bg_cv: Condvar::new(),
            pending_outputs: Mutex::default(),
            foreign_tables: Mutex::default(),
            compaction_lock: Mutex::new(()),
            pins: checkpoint::Pins::default(),
            counters: Counters::default(),
            retired: Mutex::default(),
            value_job_lock: Mutex::new(()),
            shutting_down: AtomicBool::new(false),
            failed: AtomicBool::new(false),
            lock: Mutex::new(r.lock),
            read_only: r.read_only,
            options: r.options,
        }
    }

    /// Wait until every write up to `seq` is visible (`last_seq >= seq`). Spins briefly (the
    /// write being waited for is usually a few inserts away from done), then sleeps.
    pub(crate) fn wait_published(&self, seq: SeqNo) {
        for _ in 0..PUBLISH_SPINS {
            if self.last_seq.load(Ordering::Acquire) >= seq {
                return;
            }
            std::hint::spin_loop();
        }
        self.publish_waiters.fetch_add(1, Ordering::SeqCst);
        let mut g = self.publish_lock.lock();
        while self.last_seq.load(Ordering::SeqCst) < seq {
            self.publish_cv.wait(&mut g);
        }
        drop(g);
        self.publish_waiters.fetch_sub(1, Ordering::SeqCst);
    }

    /// Make the writes `first..=last` visible, after every earlier write: waits until
    /// `last_seq` is `first - 1`, then raises it to `last`. Every writer calls this once for
    /// its own range after inserting it, so sequence numbers become visible in order.
    pub(crate) fn publish(&self, first: SeqNo, last: SeqNo) {
        self.wait_published(first.saturating_sub(1));
        self.last_seq.store(last, Ordering::SeqCst);
        // SeqCst with the waiters' increment: either a waiter's check sees the new value, or
        // this load sees the waiter and wakes it under the lock it sleeps on.
        if self.publish_waiters.load(Ordering::SeqCst) > 0 {
            let _g = self.publish_lock.lock();
            self.publish_cv.notify_all();
        }
    }

    /// Add range tombstones written into the memtables. Requires that their writes are
    /// not yet published.
    pub(crate) fn add_range_dels(&self, tombstones: Vec<crate::rangedel::RangeTombstone>) {
        let mut sv = self.super_version.write();
        *sv = Arc::new(SuperVersion {
            mem: Arc::clone(&sv.mem),
            imms: sv.imms.clone(),
            version: Arc::clone(&sv.version),
            range_dels: Arc::new(sv.range_dels.with(tombstones)),
        });
    }

    /// The current super version.
    pub(crate) fn super_version(&self) -> Arc<SuperVersion> {
        Arc::clone(&self.super_version.read())
    }

    /// Fail if the store has gone read-only after an earlier failure, or was opened
    /// read-only.
    pub(crate) fn check_writable(&self) -> Result<()> {
        if self.shutting_down.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        if self.read_only {
            return Err(Error::ReadOnlyOpen {
                path: self.dir.clone(),
            });
        }
        if !self.failed.load(Ordering::Acquire) {
            return Ok(());
        }
        match &self.bg.lock().error {
            Some(e) => Err(Error::ReadOnly(e.clone())),
            None => Ok(()),
        }
    }

    /// Record a failure that makes the store read-only, and wake everyone waiting.
    pub(crate) fn set_error(&self, e: &Error) {
        let mut bg = self.bg.lock();
        if bg.error.is_none() {
            bg.error = Some(e.to_string());
        }
        self.failed.store(true, Ordering::Release);
        self.bg_cv.notify_all();
    }

    /// Draw a file number for a new output and protect it from the obsolete-file sweep.
    pub(crate) fn new_output_number(&self) -> u64 {
        let n = self.file_numbers.fetch_add(1, Ordering::Relaxed);
        self.pending_outputs.lock().insert(n);
        n
    }
}

/// An open that failed for lack of space says how much recovery needs: it writes what the
/// logs hold beyond the tables into new tables, and starts a new log and MANIFEST.
fn no_space_hint(e: Error, env: &Env, dir: &Path) -> Error {
    let Error::Io { op, path, source } = e else {
        return e;
    };
    if source.kind() != std::io::ErrorKind::StorageFull {
        return Error::Io { op, path, source };
    }
    let logs: u64 = env
        .fs()
        .list_dir(dir)
        .unwrap_or_default()
        .iter()
        .filter(|n| n.ends_with(".log") || n.ends_with(".vlog"))
        .filter_map(|n| env.fs().file_size(&dir.join(n)).ok())
        .sum();
    let msg = format!(
        "{source}: opening the store writes the unflushed part of its logs into tables and \
         starts a new log and MANIFEST, so it needs free space of about the unflushed log \
         bytes (at most the {} MiB of its log files) plus a few MiB; free that much and open \
         it again, or open it read-only, which needs none",
        logs.div_ceil(1 << 20)
    );
    Error::Io {
        op,
        path,
        source: std::io::Error::new(std::io::ErrorKind::StorageFull, msg),
    }
}

impl Db {
    /// Open the store in `path` with the parts `wiring` builds (the public `Db::open` is
    /// in `crate::design`, which knows the designs).
    pub(crate) fn open_with(path: &Path, options: Options, wiring: &Wiring) -> Result<Db> {
        let env = options.env.clone();
        let opened = open::open(path, options, wiring).map_err(|e| no_space_hint(e, &env, path));
        let db = Db::from_inner(opened?);
        db.start_threads()?;
        let inner = db.inner().into_owned();
        let weak = Arc::downgrade(&inner);
        let services = crate::memory::MemoryServices {
            oldest_snapshot: Arc::new(move || {
                weak.upgrade()
                    .map_or(0, |i| i.snapshots.oldest(&i.last_seq))
            }),
        };
        inner.memory.start(services)?;
        Ok(db)
    }

    /// Open the store in `path` read-only with the parts `wiring` builds (the public
    /// `Db::open_read_only` is in `crate::design`): see there.
    pub(crate) fn open_read_only_with(
        path: &Path,
        options: Options,
        wiring: &Wiring,
    ) -> Result<Db> {
        Ok(Db::from_inner(read_only::open(path, options, wiring)?))
    }

    /// Open the store in `path` as a secondary handle with the parts `wiring` builds (the
    /// public `Db::open_secondary` is in `crate::design`): see there.
    pub(crate) fn open_secondary_with(
        path: &Path,
        options: Options,
        wiring: secondary::WiringFn,
    ) -> Result<Db> {
        let follow = secondary::open(path, options.clone(), wiring)?;
        Ok(Db::with_handle(Handle::Follows(Box::new(follow)), &options))
    }

    /// A handle without background threads over `inner` (a read-only one needs none).
    fn from_inner(inner: Arc<DbInner>) -> Db {
        let options = inner.options.clone();
        Db::with_handle(Handle::Fixed(inner), &options)
    }

    fn with_handle(handle: Handle, options: &Options) -> Db {
        let prefetch =
            PrefetchPool::new(options.scan_prefetch_threads, options.scan_prefetch_bytes);
        Db {
            handle,
            threads: Mutex::new(Vec::new()),
            prefetch,
        }
    }

    /// The state this handle reads and writes through now: its own, or a secondary
    /// handle's current view (each call may see a newer view after a catch-up, so a method
    /// takes it once).
    fn inner(&self) -> std::borrow::Cow<'_, Arc<DbInner>> {
        match &self.handle {
            Handle::Fixed(inner) => std::borrow::Cow::Borrowed(inner),
            Handle::Follows(f) => std::borrow::Cow::Owned(f.view()),
        }
    }

    /// The state a read at `snapshot` goes through: on a secondary handle, the view the
    /// snapshot was taken on (later views may lack what it sees), else [`Db::inner`].
    fn inner_at<'a>(
        &'a self,
        snapshot: Option<&'a Snapshot>,
    ) -> std::borrow::Cow<'a, Arc<DbInner>> {
        match (&self.handle, snapshot.and_then(|s| s.inner.view.as_ref())) {
            (Handle::Follows(_), Some(view)) => std::borrow::Cow::Borrowed(view),
            _ => self.inner(),
        }
    }

    fn start_threads(&self) -> Result<()> {
        let mut threads = self.threads.lock();
        let this = self.inner();
        let flush: fn(Arc<DbInner>) = background::flush_thread;
        let mut jobs = vec![("shale-flush".to_string(), flush)];
        for i in 0..this.options.max_background_compactions {
            jobs.push((format!("shale-compact-{i}"), background::compaction_thread));
        }
        jobs.push(("shale-gc".to_string(), value_jobs::value_job_thread));
        for (name, f) in jobs {
            let inner = Arc::clone(&this);
            let h = std::thread::Builder::new()
                .name(name.clone())
                .spawn(move || {
                    // A panic is a bug, but it must not leave writers waiting for a flush
                    // that never comes: the store turns read-only and says why.
                    let keep = Arc::clone(&inner);
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(inner)));
                    if r.is_err() {
                        keep.set_error(&Error::Io {
                            op: "background work",
                            path: None,
                            source: std::io::Error::other(format!("the {name} thread panicked")),
                        });
                    }
                })
                .map_err(|e| Error::Io {
                    op: "spawn background thread",
                    path: None,
                    source: e,
                })?;
            threads.push(h);
        }
        Ok(())
    }

    /// The directory of the store.
    pub fn path(&self) -> &Path {
        match &self.handle {
            Handle::Fixed(inner) => &inner.dir,
            Handle::Follows(f) => f.dir(),
        }
    }

    /// Set `key` to `value`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a key or value over the size limits; [`Error::ReadOnly`]
    /// after an earlier durability failure; [`Error::ReadOnlyOpen`] on a handle from
    /// [`Db::open_read_only`]; [`Error::Io`].
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.put_opt(key, value, WriteOptions::default())
    }

    /// [`Db::put`] with write options (`sync`).
    ///
    /// # Errors
    /// As [`Db::put`].
    pub fn put_opt(&self, key: &[u8], value: &[u8], options: WriteOptions) -> Result<()> {
        // Refused before the value is copied into a batch.
        write::check_entry(key, value)?;
        write::write_entry(&self.inner(), ValueKind::Value, key, value, options.sync)
    }

    /// Delete `key` (a no-op if it is absent).
    ///
    /// # Errors
    /// As [`Db::put`].
    pub fn delete(&self, key: &[u8]) -> Result<()> {
        self.delete_opt(key, WriteOptions::default())
    }

    /// [`Db::delete`] with write options (`sync`).
    ///
    /// # Errors
    /// As [`Db::put`].
    pub fn delete_opt(&self, key: &[u8], options: WriteOptions) -> Result<()> {
        write::check_entry(key, &[])?;
        write::write_entry(&self.inner(), ValueKind::Delete, key, &[], options.sync)
    }

    /// Delete every key `k` with `start <= k < end` (RocksDB's `DeleteRange`). It writes
    /// one range tombstone, whatever the range holds: reads, scans and snapshots taken after
    /// it no longer see those keys, snapshots taken before still do, and compactions drop
    /// the deleted entries once no snapshot can see them (`docs/architecture.md`, "Range
    /// deletes"). `start == end` deletes nothing.
    ///
    /// # Examples
    /// ```
    /// use shale::{Db, Options, env::Env};
    /// let db = Db::open("/db", Options::default().with_env(Env::memory()))?;
    /// db.put(b"a1", b"x")?;
    /// db.put(b"b1", b"y")?;
    /// db.delete_range(b"a", b"b")?;
    /// assert_eq!(db.get(b"a1")?, None);
    /// assert_eq!(db.get(b"b1")?.as_deref(), Some(&b"y"[..]));
    /// # Ok::<(), shale::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `start > end` or a bound is over the key size limit;
    /// [`Error::Unsupported`] for a layout without key order (`trie`); otherwise as
    /// [`Db::put`].
    pub fn delete_range(&self, start: &[u8], end: &[u8]) -> Result<()> {
        self.delete_range_opt(start, end, WriteOptions::default())
    }

    /// [`Db::delete_range`] with write options (`sync`).
    ///
    /// # Errors
    /// As [`Db::delete_range`].
    pub fn delete_range_opt(&self, start: &[u8], end: &[u8], options: WriteOptions) -> Result<()> {
        let mut b = WriteBatch::with_capacity(WriteBatch::entry_room(start, end));
        b.delete_range(start, end);
        self.write_opt(b, options)
    }

    /// Apply a batch atomically, without waiting for durability (it survives a process
    /// crash, not a machine crash).
    ///
    /// # Errors
    /// As [`Db::put`].
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        self.write_opt(batch, WriteOptions::default())
    }

    /// Apply a batch atomically; with `sync` it is durable when this returns.
    ///
    /// # Errors
    /// As [`Db::put`].
    pub fn write_opt(&self, batch: WriteBatch, options: WriteOptions) -> Result<()> {
        write::write(&self.inner(), batch, options.sync)
    }

    /// The value of `key`, if present.
    ///
    /// # Errors
    /// [`Error::Corruption`] or [`Error::Io`] from the files read.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        read::get(&self.inner(), key, None, ReadOptions::default())
    }

    /// The value of `key`, as of `snapshot` if one is given, read as `options` says
    /// (checksums, block cache).
    ///
    /// # Errors
    /// As [`Db::get`].
    pub fn get_opt(
        &self,
        key: &[u8],
        snapshot: Option<&Snapshot>,
        options: ReadOptions,
    ) -> Result<Option<Vec<u8>>> {
        let seq = snapshot.map(Snapshot::sequence);
        read::get(&self.inner_at(snapshot), key, seq, options)
    }

    /// The value of `key` as of `snapshot`.
    ///
    /// # Errors
    /// As [`Db::get`].
    pub fn get_at(&self, key: &[u8], snapshot: &Snapshot) -> Result<Option<Vec<u8>>> {
        read::get(
            &self.inner_at(Some(snapshot)),
            key,
            Some(snapshot.sequence()),
            ReadOptions::default(),
        )
    }

    /// A point-in-time view for consistent reads; released when dropped.
    pub fn snapshot(&self) -> Snapshot {
        let inner = self.inner();
        let seq = inner.snapshots.acquire_current(&inner.last_seq);
        Snapshot {
            inner: Arc::new(api::SnapshotInner {
                seq,
                registry: Arc::clone(&inner.snapshots),
                view: matches!(self.handle, Handle::Follows(_)).then(|| inner.into_owned()),
            }),
        }
    }

    /// Whether the store answers [`Db::iter`] and [`Db::cursor`]: false for a layout that
    /// places keys by hash (`lsm-trie`), whose stores answer point operations only.
    pub fn supports_scans(&self) -> bool {
        self.inner().layout.supports_scans()
    }

    /// An iterator of `(key, value)` pairs in key order; it is double-ended, so `.rev()`
    /// walks backwards.
    ///
    /// # Errors
    /// As [`Db::get`]; [`Error::Unsupported`] for a store whose layout has no key order
    /// ([`Db::supports_scans`]).
    pub fn iter(&self, options: IterOptions) -> Result<DbIterator> {
        let inner = self.inner_at(options.snapshot.as_ref()).into_owned();
        read::iter(&inner, options, self.scan_prefetch())
    }

    /// A positioned cursor with seek, next and prev. Starts unpositioned.
    ///
    /// # Errors
    /// As [`Db::iter`].
    pub fn cursor(&self, options: IterOptions) -> Result<Cursor> {
        let inner = self.inner_at(options.snapshot.as_ref()).into_owned();
        read::cursor(&inner, options, self.scan_prefetch())
    }

    /// How this store's scans prefetch values, if at all.
    fn scan_prefetch(&self) -> Option<Prefetch> {
        let o = &self.inner().options;
        (o.scan_prefetch_threads > 0 && o.scan_prefetch_depth > 0).then(|| Prefetch {
            pool: Arc::clone(&self.prefetch),
            depth: o.scan_prefetch_depth,
            after: o.scan_prefetch_after,
            slow_read: std::time::Duration::from_micros(o.scan_prefetch_slow_read_micros),
        })
    }

    /// Run `f` on the version set, under its lock, with the last published sequence number
    /// (tests commit edits of their own and read the axes' states).
    #[cfg(test)]
    pub(crate) fn with_versions<R>(
        &self,
        f: impl FnOnce(&mut crate::version::set::VersionSet, SeqNo) -> R,
    ) -> R {
        let inner = self.inner();
        let seq = inner.last_seq.load(Ordering::Acquire);
        f(&mut inner.versions.lock(), seq)
    }

    /// The scan prefetch pool (tests check what reached it).
    #[cfg(test)]
    pub(crate) fn prefetch_pool(&self) -> &Arc<PrefetchPool> {
        &self.prefetch
    }

    /// Write the memtable to a table file and wait until every frozen memtable is flushed.
    ///
    /// # Errors
    /// [`Error::ReadOnly`] if a background failure stopped flushing; [`Error::ReadOnlyOpen`]
    /// on a read-only handle; [`Error::Io`].
    pub fn flush(&self) -> Result<()> {
        background::flush_and_wait(&self.inner())
    }

    /// About how many bytes of table files each range `[start, limit)` takes (RocksDB's
    /// `GetApproximateSizes`, LevelDB's `GetApproximateSizes`): from the tables' indexes in
    /// memory, without reading data. Entries still in memtables and values in a value log
    /// are not counted; an empty or inverted range is 0.
    ///
    /// # Errors
    /// A table that cannot be opened ([`Error::Io`]) or a damaged index
    /// ([`Error::Corruption`]).
    pub fn approximate_sizes(&self, ranges: &[(&[u8], &[u8])]) -> Result<Vec<u64>> {
        let inner = self.inner();
        let sv = inner.super_version();
        let ctx = crate::layout::ReadContext {
            tables: &inner.tables,
            read: crate::env::ReadCause::Other.into(),
        };
        ranges
            .iter()
            .map(|(start, limit)| {
                inner
                    .layout
                    .approximate_size(&sv.version, &ctx, start, limit)
            })
            .collect()
    }

    /// Make every write acknowledged so far durable (RocksDB's `SyncWAL`): the log is
    /// synced through the last logged write. For writers that write with `sync: false` and
    /// choose their own sync points (a server syncing once per batch of replies); a crash
    /// after this returns keeps every write made before it was called.
    ///
    /// # Errors
    /// [`Error::ReadOnly`] after an earlier failure, [`Error::Closed`], [`Error::Io`] from the
    /// sync (the store then turns read-only: what reached the log is unknown).
    pub fn sync_wal(&self) -> Result<()> {
        let inner = self.inner();
        inner.check_writable()?;
        let _wal = inner.wal.lock();
        inner.values.sync().inspect_err(|e| inner.set_error(e))
    }

    /// Wait until the store's background work is done (RocksDB's `WaitForCompact`): every
    /// frozen memtable flushed (but those waiting for ever, with no
    /// [`Options::memtable_merge_timeout`], for [`Options::min_memtables_to_merge`] of
    /// them), no compaction running or still deleting its inputs, and none left for the
    /// layout to start. The memtable in use is not flushed (call [`Db::flush`] first for that). Writes
    /// made meanwhile may start more work, which this then waits for too. Returns at once
    /// on a read-only handle, where nothing runs.
    ///
    /// # Errors
    /// [`Error::ReadOnly`] if a background failure stopped the work; [`Error::Closed`] when
    /// the store closes meanwhile.
    pub fn wait_for_compactions(&self) -> Result<()> {
        background::wait_settled(&self.inner())
    }

    /// Compact every table overlapping `[begin, end]` (open ends: everything) down the tree.
    ///
    /// # Errors
    /// As [`Db::flush`].
    pub fn compact_range(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        background::compact_range(&self.inner(), begin, end)
    }

    /// Run one value-log garbage collection now, on the sealed segment with the most garbage
    /// whatever its ratio (a segment without garbage is never collected), and delete dropped segments no reader needs any more. Returns the
    /// number of segments dropped (0 when there is nothing to collect, and always 0 for a
    /// placement without a value log). Automatic collection needs no call to this.
    ///
    /// # Errors
    /// [`Error::ReadOnly`] after an earlier failure; [`Error::ReadOnlyOpen`] on a read-only
    /// handle; [`Error::Io`] or [`Error::Corruption`] from the segment read.
    pub fn run_value_gc(&self) -> Result<u64> {
        let inner = self.inner();
        inner.check_writable()?;
        value_jobs::run(&inner, true)
    }

    /// One run of the placement's background job as its thread runs it (`force` false:
    /// only what passes the placement's own thresholds), for tests that drive it by hand.
    #[cfg(test)]
    pub(crate) fn run_value_job(&self, force: bool) -> Result<u64> {
        value_jobs::run(&self.inner(), force)
    }

    /// The table files of the current version, level by level (level 0 newest first, other
    /// levels in key order): what each holds and its key range, as RocksDB's
    /// `GetLiveFilesMetaData` reports. A snapshot of the moment; compactions change it.
    pub fn live_files(&self) -> Vec<LiveFile> {
        stats::live_files(&self.inner())
    }

    /// Counters: bytes by cause, levels, write amplification.
    pub fn stats(&self) -> Stats {
        let mut s = stats::stats(&self.inner());
        s.scan_prefetch = self.prefetch.stats();
        s
    }

    /// A named property: `shale.stats`, `shale.num-files-at-level<N>`, `shale.levels`,
    /// `shale.last-sequence`, `shale.store-id` (16 hex digits), `shale.total-sst-bytes`, `shale.memtable-bytes`,
    /// `shale.block-cache-usage`, `shale.design`, `shale.options` (the options this handle
    /// runs with, in the options record's `key=value` lines), `shale.range-tombstones-mem` and
    /// `shale.range-tombstones` (range tombstones not yet flushed, and flushed ones the
    /// version keeps), and RocksDB's `shale.num-immutable-mem-table` (frozen memtables not
    /// yet flushed), `shale.mem-table-flush-pending` (`1` while a flush runs or is due: not
    /// for frozen memtables waiting for ever for [`Options::min_memtables_to_merge`]),
    /// `shale.compaction-pending` (`1` from any change to the tree until the background
    /// finds nothing more to start; `0` after a failure) and `shale.num-running-compactions`
    /// (background ones, counted until their inputs are deleted): with all three `0` the
    /// store is settled, as a test that wants an image with no work left waits for
    /// ([`Db::wait_for_compactions`]). `None` for an unknown name.
    pub fn property(&self, name: &str) -> Option<String> {
        stats::property(&self.inner(), name)
    }

    /// Close the store: stop background work, make the log durable and release the lock.
    ///
    /// # Errors
    /// [`Error::Io`] if the final log sync fails.
    pub fn close(self) -> Result<()> {
        self.shutdown()
    }

    /// Commit what the value placement still has to persist (value-log segments synced since
    /// the last edit), so that the next open holds them to their ends. Skipped on a store
    /// that already failed: its MANIFEST is not written again.
    ///
    /// The same edit records the lifetime counters (every commit does), so a store that
    /// took writes since open commits one at close even when the placement has nothing:
    /// counts of writes still only in the log would otherwise be lost at the next open
    /// (recovery replays them, but they are not user writes again).
    fn persist_placement(&self) -> Result<()> {
        let inner = self.inner();
        if inner.read_only {
            return Ok(());
        }
        let mut edit = crate::manifest::VersionEdit::default();
        inner.values.note_edit(&mut edit);
        let c = &inner.counters;
        let counted = [&c.user_ops, &c.flushes, &c.compactions]
            .iter()
            .any(|n| n.load(Ordering::Relaxed) > 0);
        if (edit == crate::manifest::VersionEdit::default() && !counted)
            || inner.bg.lock().error.is_some()
        {
            return Ok(());
        }
        let last_seq = inner.last_seq.load(Ordering::Acquire);
        inner
            .versions
            .lock()
            .log_and_apply(edit, last_seq)
            .map(|_| ())
    }

    fn shutdown(&self) -> Result<()> {
        let inner = self.inner();
        if inner.shutting_down.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        {
            let _bg = inner.bg.lock();
            inner.bg_cv.notify_all();
        }
        for h in self.threads.lock().drain(..) {
            let _ = h.join();
        }
        inner.memory.stop();
        // Iterators may outlive the store; after this they resolve their values themselves.
        self.prefetch.shutdown();
        let result = {
            let _wal = inner.wal.lock();
            inner.values.close()
        };
        // The close's MANIFEST edit is written only while the lock still keeps every other
        // opener out (as the sweep below checks): after a lost lock the MANIFEST may be
        // another process's business. A failed check is reported as the store's error.
        if !inner.read_only
            && let Some(lock) = inner.lock.lock().as_ref()
            && let Err(e) = lock.check()
        {
            inner.set_error(&e);
        }
        let result = result.and_then(|()| self.persist_placement());
        if !inner.read_only {
            background::delete_obsolete_files(&inner);
        }
        inner.lock.lock().take();
        // Report an earlier background failure too: the caller learns the store was not
        // healthy (its data is safe in the synced logs and is recovered at the next open).
        let earlier = inner.bg.lock().error.clone();
        match (result, earlier) {
            (Err(e), _) => Err(e),
            (Ok(()), Some(e)) => Err(Error::ReadOnly(e)),
            (Ok(()), None) => Ok(()),
        }
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}
