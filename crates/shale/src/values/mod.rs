//! The value-placement axis: where values live, and the durability log that goes with it.
//!
//! A placement owns two jobs that belong together because WiscKey's value log is both:
//! making writes durable before they reach the memory component (the *durability log*), and
//! turning what the tree stores into the user's value (*resolution*).
//!
//! - [`inline::InlinePlacement`] (LevelDB): the tree stores values as written; the durability
//!   log is the WAL (`NNNNNN.log`, `docs/format/wal.md`), one file per memtable.
//! - [`vlog::VlogPlacement`] (WiscKey): the value log (`NNNNNN.vlog`, `docs/format/vlog.md`)
//!   is the durability log; the tree stores a pointer (`ValueKind::ValuePointer`) for every
//!   value of at least `min_separated_value_size` bytes, so a large value is written once.
//!
//! The engine never asks which placement it holds: the write leader hands the sequenced
//! group to [`ValueStore::append`], a memtable switch asks [`ValueStore::freeze`] where the
//! frozen memtable's writes end, a flush asks [`ValueStore::flushed`] what its MANIFEST edit
//! must record, recovery calls [`ValueStore::recover`], and the obsolete-file sweep calls
//! [`ValueStore::delete_obsolete`].

pub mod inline;
pub mod vlog;

use std::path::Path;
use std::sync::Arc;

use crate::env::Env;
use crate::error::Result;
use crate::key::{SeqNo, ValueKind};
use crate::manifest::{AxisState, VersionEdit};
use crate::wal::WriteBatch;

pub use crate::iter::{CarriedAt, ResolveMemo, ValueBytes};
pub use inline::InlinePlacement;
pub use vlog::VlogPlacement;

/// Whether a value that a resolve reads from the placement's files is kept in the store's
/// block cache ([`ValueStore::resolve`]). What is cached already is used either way; a
/// placement that keeps nothing there ignores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheFill {
    /// Kept, evicting the least recently used entries as needed: a point lookup with
    /// [`crate::ReadOptions::fill_cache`] on (the default).
    Keep,
    /// One value of a scan with `fill_cache` on: kept by the placement's rule for scans.
    /// The value log keeps a record it read with `pread` as [`CacheFill::Keep`] does, and
    /// one it copied out of a mapped segment only while the cache has room for it without
    /// evicting anything (`docs/designs/wisckey.md`, "A scan's cache misses").
    Scan,
    /// Not kept: `fill_cache` off.
    Skip,
}

impl CacheFill {
    /// The fill of a point lookup (`scan` false) or of a scan's values with a reader's
    /// [`crate::ReadOptions::fill_cache`].
    pub fn of(fill_cache: bool, scan: bool) -> CacheFill {
        match (fill_cache, scan) {
            (false, _) => CacheFill::Skip,
            (true, false) => CacheFill::Keep,
            (true, true) => CacheFill::Scan,
        }
    }
}

/// A point in the durability log: file number and byte offset. Writes before it belong to
/// older memtables; the meaning of `offset` is the placement's (the WAL uses whole files
/// and leaves it 0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct LogPosition {
    /// The log file (WAL number or value-log segment).
    pub file: u64,
    /// The byte offset within it.
    pub offset: u64,
}

pub use crate::manifest::PersistedState;

/// A file of the durability log that a checkpoint needs, and how much of it
/// ([`ValueStore::checkpoint_files`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogFile {
    /// Its name in the store's directory.
    pub name: String,
    /// How the checkpoint takes it.
    pub take: LogFileTake,
}

/// How a checkpoint takes one log file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFileTake {
    /// The file never changes again (a sealed value-log segment): it may be hard-linked.
    Whole,
    /// Its first `n` bytes, copied (a log that still grows, or one that is short).
    Prefix(u64),
}

impl std::fmt::Display for PlacementStats {
    /// Nothing for a placement without segments; else one line of totals and one per
    /// segment.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mb = |b: u64| b as f64 / 1e6;
        if self.wal_bytes_dropped > 0 {
            writeln!(
                f,
                "recovery dropped {} bytes of write-ahead log (a torn tail, or damage the WAL recovery mode cut)",
                self.wal_bytes_dropped
            )?;
        }
        if self.segments.is_empty() {
            return Ok(());
        }
        let bytes: u64 = self.segments.iter().map(|s| s.1).sum();
        let garbage: u64 = self.segments.iter().map(|s| s.2).sum();
        writeln!(
            f,
            "value log: {} segments {:.1} MB garbage {:.1} MB; gc runs {} read {:.1} MB relocated {} records {:.1} MB segments dropped {} steps {}; {} records skipped as superseded",
            self.segments.len(),
            mb(bytes),
            mb(garbage),
            self.gc_runs,
            mb(self.gc_bytes_read),
            self.gc_records_relocated,
            mb(self.gc_bytes_relocated),
            self.gc_segments_deleted,
            self.gc_steps,
            self.gc_records_skipped
        )?;
        for (n, b, g) in &self.segments {
            writeln!(
                f,
                "  segment {n:06}: {:.1} MB, garbage {:.1} MB",
                mb(*b),
                mb(*g)
            )?;
        }
        for (n, at) in &self.gc_damaged_segments {
            writeln!(
                f,
                "  segment {n:06}: damaged record at byte {at}, left alone by garbage collection until the store is reopened (run `shale verify`)"
            )?;
        }
        Ok(())
    }
}

/// Whether bytes `from..to` of `file` are all zeros (read in chunks of 1 MiB): space a log
/// reserved ahead of its writer, or pages never written back, hold no record.
pub(crate) fn zeros_between(
    file: &crate::env::ReadFile,
    from: u64,
    to: u64,
    cause: crate::env::ReadCause,
) -> Result<bool> {
    const CHUNK: u64 = 1 << 20;
    let mut buf = vec![0u8; CHUNK.min(to.saturating_sub(from)) as usize];
    let mut at = from;
    while at < to {
        let n = (to - at).min(CHUNK) as usize;
        let chunk = buf.get_mut(..n).unwrap_or_default();
        file.read_exact_at(chunk, at, cause)?;
        if chunk.iter().any(|&b| b != 0) {
            return Ok(false);
        }
        at += n as u64;
    }
    Ok(true)
}

/// Where the bytes of the first `len` bytes of `file` end once the zeros after them are left
/// out (read backwards in chunks of 64 KiB): a log's written length, without the space it
/// reserved ahead of its writer (`Env::create_log`), for counting what a log held. A record
/// whose last bytes are zeros ends earlier by this measure, so it is for counts only, never
/// for where reading stops.
pub(crate) fn data_end(
    file: &crate::env::ReadFile,
    len: u64,
    cause: crate::env::ReadCause,
) -> Result<u64> {
    const CHUNK: u64 = 64 << 10;
    let mut buf = vec![0u8; CHUNK.min(len) as usize];
    let mut end = len;
    while end > 0 {
        let n = end.min(CHUNK);
        let chunk = buf.get_mut(..n as usize).unwrap_or_default();
        file.read_exact_at(chunk, end - n, cause)?;
        if let Some(i) = chunk.iter().rposition(|&b| b != 0) {
            return Ok(end - n + i as u64 + 1);
        }
        end -= n;
    }
    Ok(0)
}

/// What recovery gives a placement.
pub struct RecoverContext<'a> {
    /// The file system.
    pub env: &'a Env,
    /// The store's directory.
    pub dir: &'a Path,
    /// What the MANIFEST recorded.
    pub state: &'a PersistedState,
    /// The names in the directory.
    pub names: &'a [String],
    /// The last sequence number the MANIFEST records (new writes continue after it and
    /// after every replayed one).
    pub last_sequence: SeqNo,
    /// The store's id (MANIFEST tag 17): a log must carry it.
    pub store_id: u64,
    /// The store's block cache, if any: a placement that reads values from its own files
    /// may keep them there (keyed by its file numbers, which no table shares).
    pub block_cache: Option<&'a Arc<crate::cache::block_cache::BlockCache>>,
    /// What to do with damage in the write-ahead log ([`crate::Options::wal_recovery_mode`]).
    pub wal_recovery_mode: crate::options::WalRecoveryMode,
}

/// What repair (`crate::repair`, `db/repair.rs`) gives a placement: the store's files as
/// they are, and what repair decided so far. Nothing has been changed on disk yet.
pub struct SalvageContext<'a> {
    /// The file system.
    pub env: &'a Env,
    /// The store's directory.
    pub dir: &'a Path,
    /// The names in the directory.
    pub names: &'a [String],
    /// The repaired store's id: the newest readable MANIFEST's, else the one its tables
    /// record, else the one [`ValueStore::salvage_store_id`] found, else a fresh one.
    pub store_id: u64,
    /// Whether `store_id` was recorded somewhere (false: a fresh id, which no log carries).
    pub store_id_known: bool,
    /// What the newest readable MANIFEST recorded for the placement, if one could be read
    /// (`None`: repair knows the logs only from themselves).
    pub state: Option<&'a PersistedState>,
    /// The tables repair keeps so far, opened and read in full.
    pub tables: &'a [Arc<dyn crate::table::TableReader>],
}

/// What a placement's repair did with its log files.
#[derive(Clone, Debug, Default)]
pub struct Salvaged {
    /// The largest sequence number replayed (0 if none).
    pub last_seq: SeqNo,
    /// One entry per log file read.
    pub logs: Vec<RecoveredLog>,
    /// Files repair must set aside (move to `lost/`) before it commits, with why: files the
    /// store cannot use (another store's, or damaged where nothing can be read).
    pub set_aside: Vec<(String, String)>,
    /// Files whose every usable record is in the tables repair writes: moved to `lost/`
    /// once the new MANIFEST commits (they are not needed any more).
    pub converted: Vec<String>,
    /// What else the placement found, one line each (for the report).
    pub notes: Vec<String>,
}

/// One log file as a placement's repair read it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecoveredLog {
    /// Its name in the store's directory.
    pub name: String,
    /// Entries replayed into the new tables.
    pub entries: u64,
    /// Entries not replayed because the tables already hold them (written at or below the
    /// newest sequence number the tables hold, or before the MANIFEST's log position).
    pub skipped: u64,
    /// Bytes dropped: a torn or damaged tail and what follows it.
    pub bytes_dropped: u64,
    /// Why the log ended early, if it did.
    pub damage: Option<String>,
}

/// Receives each entry as the memory component must store it: key, sequence number, kind,
/// and the stored value (the value itself, or a pointer for [`ValueKind::ValuePointer`]).
pub type Apply<'a> = dyn FnMut(&[u8], SeqNo, ValueKind, &[u8]) + 'a;

/// Counters a placement reports in `Db::stats()`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlacementStats {
    /// Per value-log segment: (number, bytes, garbage bytes), oldest first.
    pub segments: Vec<(u64, u64, u64)>,
    /// Bytes garbage collection read.
    pub gc_bytes_read: u64,
    /// Bytes of live records garbage collection rewrote at the head.
    pub gc_bytes_relocated: u64,
    /// Records garbage collection rewrote.
    pub gc_records_relocated: u64,
    /// Segments garbage collection removed.
    pub gc_segments_deleted: u64,
    /// Garbage-collection runs.
    pub gc_runs: u64,
    /// Records garbage collection skipped without a lookup: a flush had superseded them.
    pub gc_records_skipped: u64,
    /// Steps garbage collection committed inside a segment (a "collected up to" offset,
    /// after which the prefix is punched out of the file; `docs/format/vlog.md` §4).
    pub gc_steps: u64,
    /// Segments garbage collection found a damaged record in, with the record's offset:
    /// each is left as it is (its records may be live) and not collected again until the
    /// store is reopened; the run that found it returned `Error::Corruption` naming it.
    /// `shale verify` reports the damage too.
    pub gc_damaged_segments: Vec<(u64, u64)>,
    /// Bytes of the durability log (the WAL, or the value log) that recovery dropped at
    /// open: torn tails, and what the WAL recovery mode cut or skipped. Zeros after the last
    /// record (space reserved ahead of the writer) are not counted.
    pub wal_bytes_dropped: u64,
}

/// A value placement and its durability log.
///
/// # Contract
/// Thread-safety: `resolve` is called by any number of readers at once and must stay cheap
/// (positional reads, no lock held across I/O that writers wait on). `append` and `freeze`
/// are called only by the write leader, which holds the engine's write lock, so they never
/// run concurrently with each other; `flushed`, `sync` and `delete_obsolete` may run
/// concurrently with them.
///
/// Durability: when `append` returns `Ok`, the group survives a process crash, and with
/// `sync` a machine crash. Recovery yields a prefix of the appended groups, each group whole
/// or not at all, and a group logged after a synced one never survives without it. If
/// `append` or `freeze` fails, the log may end in a partial record and the engine turns the
/// store read-only (except for [`crate::Error::InvalidArgument`], which wrote nothing).
///
/// Positions: `freeze` returns the position where the frozen memtable's writes end; when that
/// memtable (and every older one) is in tables, the engine commits an edit filled by
/// `flushed(position)`, after which recovery need not replay anything before it.
pub trait ValueStore: Send + Sync + std::fmt::Debug {
    /// The placement's name.
    fn name(&self) -> &'static str;

    /// What this placement adds to the MANIFEST's format tag after the layout's name
    /// (`leveled+vlog`), when its stores cannot be read by another placement; `None` for
    /// one whose stores any placement reads (the format tag is the layout's name alone).
    fn store_tag(&self) -> Option<&'static str> {
        None
    }

    /// The placement's durable state in a new store: what its MANIFEST records are replayed
    /// into (see [`PersistedState`]). Default: a placement that records nothing but the log
    /// number.
    fn empty_state(&self) -> Box<dyn AxisState> {
        Box::new(crate::manifest::NoState(crate::manifest::Axis::Values))
    }

    /// Check the placement's own files as `verify` does, after
    /// [`recover_read_only`](Self::recover_read_only) replayed its log (the value log: every
    /// live segment and every pointer into it; what replay found, e.g. the bytes it would
    /// drop). Reads only the files recovery opened or would open. Default: nothing to check.
    ///
    /// # Errors
    /// The first problem: [`crate::Error::Corruption`] naming the file and offset, or I/O.
    fn verify(&self, _ctx: &VerifyContext<'_>) -> Result<PlacementChecked> {
        Ok(PlacementChecked::default())
    }

    /// Replay every write the MANIFEST does not cover, whole groups in log order, through
    /// `apply`; then start a fresh log for new writes and record in `edit` where recovery
    /// starts next time (the engine commits `edit` after writing the replayed memtables to
    /// tables). Returns the largest sequence number replayed (0 if none).
    fn recover(
        &self,
        ctx: &RecoverContext<'_>,
        apply: &mut Apply<'_>,
        edit: &mut VersionEdit,
    ) -> Result<SeqNo>;

    /// [`recover`](Self::recover) for a read-only handle: replay the same writes, with the
    /// same checks, through `apply`, but change nothing on disk (no new log, no file removed,
    /// no edit) and keep the log's files readable for the handle's lifetime where the
    /// placement reads them later (the value log's segments, opened now: a writer in another
    /// process may delete them). The placement takes no writes afterwards. Returns the
    /// largest sequence number replayed (0 if none).
    fn recover_read_only(&self, ctx: &RecoverContext<'_>, apply: &mut Apply<'_>) -> Result<SeqNo>;

    /// Make the sequenced `batch` durable (synced when `sync`). Returns what the memory
    /// component must store: `None` when it stores the batch's entries as written (the engine
    /// then lets each writer of a group insert its own batch, concurrently), or the entries
    /// to store instead (a value log's pointers), one for each of the batch's, in order and
    /// sequenced like it, which the write leader inserts once it has released the write lock.
    fn append(&self, batch: &WriteBatch, sync: bool) -> Result<Option<WriteBatch>>;

    /// As [`ValueStore::append`], for a batch that garbage collection rewrites (its bytes are
    /// counted under [`crate::env::WriteCause::Gc`] where the log can tell). It need not be
    /// synced: [`GcHost::retire`] syncs the log before the drop that depends on it.
    fn append_relocation(&self, batch: &WriteBatch) -> Result<Option<WriteBatch>> {
        self.append(batch, true)
    }

    /// The mutable memtable is being frozen: return the position where its writes end.
    fn freeze(&self) -> Result<LogPosition>;

    /// Whether the mutable memtable should be frozen although it is not full: the log has
    /// grown so far past the last freeze that recovery would replay too much, or that
    /// space behind the head cannot be reclaimed. Asked by the write leader before each group.
    fn wants_freeze(&self) -> bool {
        false
    }

    /// Every write before `end` is in tables synced to disk: make what those tables point to
    /// durable and record in `edit` what recovery may skip from now on.
    fn flushed(&self, end: LogPosition, edit: &mut VersionEdit) -> Result<()>;

    /// Make every appended write durable.
    fn sync(&self) -> Result<()>;

    /// The store is closing and takes no more writes: make every appended write durable and
    /// leave in [`note_edit`](Self::note_edit) whatever lets the next open trust the log as
    /// it stands (the value log records its active segment as sealed, so the next open
    /// replays it as pointers, not with its values copied into the tables).
    fn close(&self) -> Result<()> {
        self.sync()
    }

    /// Delete the log files `state` no longer needs. `names` is a listing of the directory
    /// taken before `state` was read. Errors are ignored (a file left behind is deleted later).
    fn delete_obsolete(&self, names: &[String], state: &PersistedState);

    /// The log files a copy of the store needs (a checkpoint, `db/checkpoint.rs`) to
    /// recover what the MANIFEST's `state` and every write appended so far hold: the files
    /// `state` does not call obsolete, each with how much of it to take. Called with the
    /// engine's write lock and the MANIFEST lock held, after [`ValueStore::sync`]: nothing is
    /// appended meanwhile and every appended byte is durable. `names` is a listing of the
    /// directory taken under those locks. The default refuses: a placement must say which of
    /// its files a copy needs.
    ///
    /// # Errors
    /// [`crate::Error::Unsupported`] (the default), [`crate::Error::Closed`], I/O.
    fn checkpoint_files(&self, names: &[String], state: &PersistedState) -> Result<Vec<LogFile>> {
        let _ = (names, state);
        Err(crate::Error::Unsupported(format!(
            "the {} value placement cannot be checkpointed",
            self.name()
        )))
    }

    /// Turn a stored value of `kind` for `key` into the user's value. A pointer is checked
    /// against the live segments and the record it names (checksum, and the record's key
    /// must be `key`): a bad pointer is [`crate::Error::Corruption`], never another value.
    /// A memory component's entry that carries its value beside its pointer
    /// ([`carried_at`](Self::carried_at)) is answered from the entry: its bytes after the
    /// pointer are taken only when their length is the value length of the record the
    /// pointer names, else they are `Corruption` too.
    /// `cause` is what the bytes read count under ([`crate::env::IoStats`]): a point lookup,
    /// a scan's values, a compaction filter; `fill` whether a value read from a file is
    /// kept in the block cache. A value the placement holds in memory may come back shared
    /// ([`ValueBytes::Shared`]), not copied.
    fn resolve<'a>(
        &self,
        key: &[u8],
        kind: ValueKind,
        stored: &'a [u8],
        cause: crate::env::ReadCause,
        fill: CacheFill,
    ) -> Result<ValueBytes<'a>>;

    /// [`ValueStore::resolve`] for one of a scan's entries: `memo` is the scan's own (one
    /// per cursor, kept between its entries), where the placement may keep what the next
    /// entry would look up again (the value log: the segment of the last pointer). The
    /// checks and the result are `resolve`'s. Default: `resolve`.
    fn resolve_in<'a>(
        &self,
        memo: &mut ResolveMemo,
        key: &[u8],
        kind: ValueKind,
        stored: &'a [u8],
        cause: crate::env::ReadCause,
        fill: CacheFill,
    ) -> Result<ValueBytes<'a>> {
        let _ = memo;
        self.resolve(key, kind, stored, cause, fill)
    }

    /// How to find the value that a memory component's entry carries beside what a table
    /// would store (the value log's memtable entries: the pointer, then the value,
    /// [`crate::Options::vlog_memtable_value_max`]), so that a scan takes it from the entry
    /// without resolving it: a function the cursor calls for every pointer entry it meets.
    /// `None` for a placement whose entries never carry a value (the default): the cursor
    /// then asks nothing.
    fn carried_at(&self) -> Option<CarriedAt> {
        None
    }

    /// What a flush writes to a table for a memory component's entry of `kind` that stores
    /// `stored`: `stored` without a value it carries ([`carried_at`](Self::carried_at)).
    /// Default: `stored`.
    fn table_value<'a>(&self, kind: ValueKind, stored: &'a [u8]) -> &'a [u8] {
        let _ = kind;
        stored
    }

    /// Counters for `Db::stats()`.
    fn stats(&self) -> PlacementStats {
        PlacementStats::default()
    }

    /// A flush or compaction dropped an entry that no reader can see any more. Called during
    /// the merge (before its edit commits).
    fn discarded(&self, _kind: ValueKind, _stored: &[u8]) {}

    /// The compaction filter removed or replaced an entry whose stored value is `stored`
    /// (of `kind`): once the merge commits no reader sees it again. Called during the merge;
    /// what a placement counts is persisted with the next edit it sees in
    /// [`note_edit`](Self::note_edit). Default: nothing (the value was in the table).
    fn filtered(&self, _kind: ValueKind, _stored: &[u8]) {}

    /// An edit is about to be committed: add what the placement must persist with it (the
    /// value log's garbage counts found since the last edit).
    fn note_edit(&self, _edit: &mut VersionEdit) {}

    /// Repair, before anything is written: the id of the store its logs record, when
    /// nothing else (no readable MANIFEST, no table) says which store this is. Default: none.
    fn salvage_store_id(&self, _env: &Env, _dir: &Path, _names: &[String]) -> Option<u64> {
        None
    }

    /// Repair, first step: check the tables repair keeps (`ctx.tables`) against the
    /// placement's own files, and refuse a directory whose logs are another placement's.
    /// Returns the tables (positions in `ctx.tables`) that cannot be kept, with why: for a
    /// value log, a pointer that names no record of a segment present in the directory.
    /// Changes nothing on disk. Default: every table is kept.
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] for a directory whose log files this placement does
    /// not write (repair with the store's design); I/O.
    fn salvage_check(&self, _ctx: &SalvageContext<'_>) -> Result<Vec<(usize, String)>> {
        Ok(Vec::new())
    }

    /// Repair, last step (after [`ValueStore::salvage`], whose records are in `edit`):
    /// `newest` yields the kind and stored value of each key's newest version in the
    /// repaired tables; record in `edit` how much of each log file the placement keeps is
    /// garbage (not the newest version of a key). The old MANIFEST's counts are not
    /// trusted, and records compactions dropped from the tables before the repair are
    /// counted too, so garbage collection can reclaim them. Default: nothing to count.
    ///
    /// # Errors
    /// Those of `newest` (reading the tables).
    fn salvage_garbage(
        &self,
        newest: &mut dyn Iterator<Item = Result<(ValueKind, Vec<u8>)>>,
        edit: &mut VersionEdit,
    ) -> Result<()> {
        let _ = (newest, edit);
        Ok(())
    }

    /// Repair, second step (after [`ValueStore::salvage_check`]): replay through `apply`
    /// every entry its log files hold that the kept tables do not (written after
    /// `flushed_seq`, the newest sequence number they hold, and after the MANIFEST's log
    /// position when `ctx.state` has one), in log order; a log's torn or damaged tail is
    /// dropped with what follows it in that log, and the next log is read. Record in `edit`
    /// the placement's state for the repaired store (the MANIFEST repair writes holds it):
    /// nothing left to replay, and every file it keeps readable. Makes the files it keeps
    /// durable. Creates and removes nothing: it names the files repair moves to `lost/`.
    ///
    /// # Errors
    /// I/O. Default: [`crate::Error::Unsupported`].
    fn salvage(
        &self,
        ctx: &SalvageContext<'_>,
        flushed_seq: SeqNo,
        apply: &mut Apply<'_>,
        edit: &mut VersionEdit,
    ) -> Result<Salvaged> {
        let _ = (ctx, flushed_seq, apply, edit);
        Err(crate::Error::Unsupported(format!(
            "the {} value placement cannot be repaired",
            self.name()
        )))
    }

    /// The placement's garbage-collection part, if it has one (the value log). The engine
    /// counts what each flush supersedes, paces writes and runs collection only through it.
    fn gc(&self) -> Option<&dyn ValueGc> {
        None
    }
}

/// The optional part of a placement whose log holds garbage to collect (the value log).
///
/// # Contract
/// `superseded` is called by flushes (one at a time), `before_write` by user writers outside
/// every lock, `collect_garbage` by one collection at a time (background or manual); they may
/// run concurrently with each other and with the core's calls.
pub trait ValueGc: Send + Sync {
    /// A flush about to commit `edit` writes a newer entry for the key of `stored` (a value
    /// of `kind` as this placement stored it): no new reader will see `stored` again. Called
    /// once per superseded entry, before `edit` commits; what is counted goes into `edit`.
    /// (The engine looks up in the tree each key a flush writes to find them.)
    fn superseded(&self, kind: ValueKind, stored: &[u8], edit: &mut VersionEdit);

    /// Whether a table with these properties may hold stored values that
    /// [`ValueGc::superseded`] counts: when no table of the tree may, a flush skips the
    /// tree lookup per flushed key that counting costs.
    fn may_count_in(&self, table: &crate::table::TableProperties) -> bool;

    /// A user write of `bytes` is about to be sequenced (called outside every lock): the
    /// placement may slow it (the value log does while its collection is behind).
    fn before_write(&self, _bytes: usize) {}

    /// Whether collection should run on its own (the engine then runs a thread that calls
    /// [`ValueGc::collect_garbage`]); manual collection works either way.
    fn wants_gc(&self) -> bool;

    /// Collect garbage through `host`: pick a segment worth collecting (when `force`, any
    /// sealed segment with some garbage), relocate its live values, drop it. Returns the
    /// number of segments dropped.
    fn collect_garbage(&self, host: &dyn GcHost, force: bool) -> Result<u64>;
}

/// A value that garbage collection found in the log and keeps only if the tree still points
/// to its record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Relocation {
    /// The user key.
    pub key: Vec<u8>,
    /// The value.
    pub value: Vec<u8>,
    /// The stored pointer ([`ValueKind::ValuePointer`]) that names the record: the newest
    /// entry of the key must hold exactly these bytes.
    pub pointer: Vec<u8>,
}

/// What the engine offers garbage collection.
pub trait GcHost {
    /// What the MANIFEST records now.
    fn persisted(&self) -> PersistedState;
    /// Write each relocation's value again with a fresh sequence number, but only
    /// if the newest entry for its key is still exactly its pointer;
    /// checked and written atomically with respect to user writes. Returns the relocations
    /// written.
    fn relocate(&self, records: &[Relocation]) -> Result<u64>;
    /// Sync the log (the relocations made so far, and the writes that made the other
    /// records dead), then commit a MANIFEST edit holding `records` (the placement's, which
    /// retire `files`). Until no snapshot, iterator or read that started before the commit
    /// is left, the obsolete-file sweep does not offer `files` to
    /// [`ValueStore::delete_obsolete`]; then it does, and the placement deletes them.
    fn retire(&self, records: Vec<crate::manifest::AxisRecord>, files: Vec<String>) -> Result<()>;
    /// Whether the store is closing: a collection should stop.
    fn closing(&self) -> bool;
    /// The newest sequence number used (user writes and relocations).
    fn last_sequence(&self) -> SeqNo;
}

/// What `verify` hands the placement's checks (after its read-only recovery).
pub struct VerifyContext<'a> {
    /// What the MANIFEST records.
    pub state: &'a PersistedState,
    /// The live tables, opened.
    pub tables: &'a [Arc<dyn crate::table::TableReader>],
}

/// What a placement's checks found, for [`crate::VerifyReport`].
#[derive(Clone, Copy, Debug, Default)]
pub struct PlacementChecked {
    /// Log segments checked (header and every record's checksum).
    pub segments: usize,
    /// Bytes of the segments checked.
    pub bytes: u64,
    /// Records checked.
    pub records: u64,
    /// Value pointers in live tables checked against the record they name.
    pub pointers: u64,
    /// Write-ahead logs replayed as recovery would.
    pub logs: usize,
    /// Bytes of the durability log that recovery would drop (a torn tail, or what the WAL
    /// recovery mode cuts or skips). Zeros after the last record (space a log reserves
    /// ahead of its writer) hold no write and are not counted.
    pub log_bytes_dropped: u64,
}
