//! The engine's half of value-log garbage collection: the [`GcHost`] a placement collects
//! through, the background thread, and the deferred deletion of dropped segments.
//!
//! # Why a relocation never resurrects a deleted key (Badger issue 2286)
//! A relocation is a *conditional* write made under the `wal` lock, which every user write
//! also holds while it is sequenced, logged and inserted. Under the lock, the newest entry of
//! the key (mutable memtable, frozen memtables, then the tree, all from the super version
//! the lock keeps consistent) must be a pointer to exactly the record being moved; only then
//! is the value appended at the head with the next sequence number. A delete or overwrite
//! sequenced before is seen, and the record is left to die; one sequenced after gets a higher
//! sequence number and hides the relocated copy. Recovery replays from the MANIFEST's head,
//! which never lies before a dropped segment, so an old record is never replayed again.
//!
//! # When a dropped segment's file is deleted
//! The segment is registered as a *zombie* before the edit that drops it commits (so the
//! obsolete-file sweep never sees the drop without the pin), then records the versions alive
//! at the commit. Its file is deleted once every one of those versions is gone (every read
//! and iterator holds the version of its super version, and one that started before the
//! commit may hold an old pointer) and no snapshot is older than the last relocation.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use super::{DbInner, SuperVersion, write};
use crate::cache::table_cache::TableCache;
use crate::env::ReadCause;
use crate::error::{Error, Result};
use crate::key::{MAX_SEQNO, SeqNo, ValueKind, parse_internal_key, seek_key};
use crate::layout::{Layout, ReadContext};
use crate::manifest::{AxisRecord, VersionEdit};
use crate::memory::{MemLookup, MemTable};
use crate::values::{GcHost, PersistedState, Relocation, ValueStore};
use crate::version::Version;
use crate::wal::WriteBatch;

/// A file a value placement retired, waiting for its last possible reader.
pub(crate) struct Zombie {
    file: String,
    /// The last sequence number when the segment was dropped: snapshots below it may read it.
    gc_seq: SeqNo,
    /// The versions alive when the drop committed (`None` until then).
    waits: Option<Vec<Weak<Version>>>,
}

/// How often the thread looks for work when nothing wakes it.
const IDLE: Duration = Duration::from_millis(200);

/// Slowing of user writes while collection is behind: each write adds its size times
/// `ns_per_kib` to a shared debt, and the write that brings the debt past a millisecond
/// sleeps that millisecond (short sleeps are not precise enough to spread).
#[derive(Debug, Default)]
pub(crate) struct Pace {
    ns_per_kib: AtomicU64,
    debt_ns: AtomicU64,
}

/// Garbage fraction of the collectable log from which user writes are slowed, while some
/// segment is collectable (see `reclaimable_fraction`): a store that is mostly log then has
/// space amplification of about 1.33, and the collector (which on 2 shared cores reclaims
/// less than a writer at full speed overwrites) gets time to catch up.
const PACE_FRACTION: f64 = 0.25;

/// The delay per KiB written for a garbage `fraction`: none below [`PACE_FRACTION`], then
/// 2 µs doubling every 5 points up to 16 µs (a 4 KiB write at ~20 µs is slowed to about
/// 0.7x at the first step).
pub(crate) fn pace_ns_per_kib(fraction: f64) -> u64 {
    if fraction.is_nan() || fraction < PACE_FRACTION {
        return 0;
    }
    let steps = ((fraction - PACE_FRACTION) / 0.05).floor() as u32;
    2_000 << steps.min(3)
}

/// Slow a user write of `bytes` as the collector's backlog asks (see [`Pace`]).
pub(crate) fn pace(inner: &DbInner, bytes: usize) {
    let per = inner.gc_pace.ns_per_kib.load(Ordering::Relaxed);
    if per == 0 {
        return;
    }
    let add = per.saturating_mul(bytes as u64) / 1024;
    let debt = inner
        .gc_pace
        .debt_ns
        .fetch_add(add, Ordering::Relaxed)
        .saturating_add(add);
    const SLICE: u64 = 1_000_000;
    // Pay a slice only if the debt still holds one: another writer may have paid it, or the
    // collector reset the debt, since the add (an unconditional subtraction wrapped it).
    if debt >= SLICE
        && inner
            .gc_pace
            .debt_ns
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |d| {
                d.checked_sub(SLICE)
            })
            .is_ok()
    {
        std::thread::sleep(Duration::from_nanos(SLICE));
    }
}

/// Foreground writes are judged idle when no user write was sequenced during this long.
const IDLE_WINDOW: Duration = Duration::from_millis(50);

struct Host<'a> {
    inner: &'a Arc<DbInner>,
    /// Start of the current rate budget (reset while writes are idle).
    started: Cell<Instant>,
    /// Bytes read against the current budget.
    read: Cell<u64>,
    /// Bytes per second; 0: no limit.
    rate: u64,
    /// Sequence numbers this run's relocations took (not user writes).
    own_seqs: Cell<u64>,
    /// The idle check's window: its start, and user sequence numbers seen at its start.
    window: Cell<(Instant, SeqNo)>,
    /// Whether to slow user writes while the backlog is high (automatic collection only).
    pace: bool,
}

impl Host<'_> {
    /// Sequence numbers taken by user writes (the last sequence number less relocations).
    fn user_seq(&self) -> SeqNo {
        self.inner
            .last_seq
            .load(Ordering::Acquire)
            .saturating_sub(self.own_seqs.get())
    }

    /// Whether no user write arrived during the last full window; the throttle then lets
    /// collection read at full speed (it competes with no one).
    fn writes_idle(&self) -> bool {
        let (since, seq) = self.window.get();
        if since.elapsed() < IDLE_WINDOW {
            return false;
        }
        let now = self.user_seq();
        self.window.set((Instant::now(), now));
        now == seq
    }
}

impl GcHost for Host<'_> {
    fn persisted(&self) -> PersistedState {
        self.inner.versions.lock().placement()
    }

    fn relocate(&self, records: &[Relocation]) -> Result<u64> {
        let inner = self.inner;
        // A first check without the lock drops the records already dead, so that the lock
        // is held only to confirm the rest.
        let sv = inner.super_version();
        let mut live = Vec::with_capacity(records.len());
        for r in records {
            if points_to(inner, &sv, r)? {
                live.push(r);
            }
        }
        drop(sv);
        if live.is_empty() {
            return Ok(0);
        }
        let mut wal = inner.wal.lock();
        inner.check_writable()?;
        write::make_room(inner, &mut wal, false)?;
        // Under the lock, the super version's mutable memtable is `wal.mem`.
        let sv = inner.super_version();
        let mut batch = WriteBatch::new();
        for r in live {
            if points_to(inner, &sv, r)? {
                batch.put(&r.key, &r.value);
            }
        }
        if batch.is_empty() {
            return Ok(0);
        }
        let n = batch.len() as u64;
        write::log_and_apply(inner, &wal, &mut batch, true, false)?;
        self.own_seqs.set(self.own_seqs.get() + n);
        Ok(n)
    }

    fn retire(&self, records: Vec<AxisRecord>, files: Vec<String>) -> Result<()> {
        let inner = self.inner;
        // A record was judged dead because a newer write or delete of its key exists; that
        // write may still be unsynced. Make it durable before the drop commits: otherwise a
        // crash can lose it and recover a state whose newest entry of the key points into
        // the dropped segment (the crash_enum vlog-flush flake).
        {
            let _wal = inner.wal.lock();
            if let Err(e) = inner.values.sync() {
                inner.set_error(&e);
                return Err(e);
            }
        }
        let gc_seq = inner.last_seq.load(Ordering::Acquire);
        inner
            .vlog_zombies
            .lock()
            .extend(files.iter().map(|file| Zombie {
                file: file.clone(),
                gc_seq,
                waits: None,
            }));
        let mut edit = VersionEdit {
            records,
            ..VersionEdit::default()
        };
        inner.values.note_edit(&mut edit);
        let mut versions = inner.versions.lock();
        let waits = versions.live_versions();
        let version = match versions.log_and_apply(edit, inner.last_seq.load(Ordering::Acquire)) {
            Ok(v) => v,
            Err(e) => {
                // The drop may or may not be in the MANIFEST: the zombie stays pinned.
                drop(versions);
                inner.set_error(&e);
                return Err(e);
            }
        };
        {
            let mut sv = inner.super_version.write();
            *sv = Arc::new(SuperVersion {
                mem: Arc::clone(&sv.mem),
                imms: sv.imms.clone(),
                version,
            });
        }
        drop(versions);
        for z in inner
            .vlog_zombies
            .lock()
            .iter_mut()
            .filter(|z| files.contains(&z.file))
        {
            z.waits = Some(waits.clone());
        }
        Ok(())
    }

    fn backlog(&self, fraction: f64) {
        let per = if self.pace {
            pace_ns_per_kib(fraction)
        } else {
            0
        };
        self.inner.gc_pace.ns_per_kib.store(per, Ordering::Relaxed);
        if per == 0 {
            self.inner.gc_pace.debt_ns.store(0, Ordering::Relaxed);
        }
    }

    fn throttle(&self, bytes: u64) -> Result<()> {
        if self.inner.shutting_down.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        if self.rate == 0 {
            return Ok(());
        }
        if self.writes_idle() {
            self.started.set(Instant::now());
            self.read.set(0);
            return Ok(());
        }
        let read = self.read.get() + bytes;
        self.read.set(read);
        {
            let due = Duration::from_secs_f64(read as f64 / self.rate as f64);
            let elapsed = self.started.get().elapsed();
            if due > elapsed {
                std::thread::sleep((due - elapsed).min(Duration::from_millis(100)));
            }
        }
        Ok(())
    }
}

/// Whether the newest entry of `r.key` in `sv` is a pointer to exactly `r`'s record.
fn points_to(inner: &DbInner, sv: &SuperVersion, r: &Relocation) -> Result<bool> {
    let is_it = |kind: ValueKind, stored: &[u8]| {
        kind == ValueKind::ValuePointer && stored == r.pointer.as_slice()
    };
    for mem in std::iter::once(&sv.mem).chain(sv.imms.iter()) {
        match mem.get(&r.key, MAX_SEQNO) {
            Some(MemLookup::Found(kind, v)) => return Ok(is_it(kind, &v)),
            Some(MemLookup::Deleted) => return Ok(false),
            None => {}
        }
    }
    let ctx = ReadContext {
        tables: &inner.tables,
        cause: ReadCause::Gc,
    };
    let seek = seek_key(&r.key, MAX_SEQNO);
    match inner.layout.get(&sv.version, &ctx, &r.key, &seek)? {
        None => Ok(false),
        Some((ikey, value)) => {
            let parsed = parse_internal_key(&ikey)
                .map_err(|d| Error::corruption(&inner.dir, 0, format!("GC lookup: {d}")))?;
            Ok(is_it(parsed.kind, &value))
        }
    }
}

/// Run one collection (`force`: any sealed segment, whatever its garbage ratio), then delete
/// the dropped segments no reader needs. Returns the segments dropped.
pub(crate) fn run(inner: &Arc<DbInner>, force: bool) -> Result<u64> {
    let _one = inner.gc_lock.lock();
    let now = Instant::now();
    let host = Host {
        inner,
        started: Cell::new(now),
        read: Cell::new(0),
        rate: if force {
            0
        } else {
            inner.options.vlog_gc_bytes_per_sec
        },
        own_seqs: Cell::new(0),
        window: Cell::new((now, inner.last_seq.load(Ordering::Acquire))),
        pace: inner.values.wants_gc(),
    };
    let r = inner.values.collect_garbage(&host, force);
    reap(inner);
    r
}

/// Before a flush of `mem` commits `edit`: report to the placement every stored value the
/// flush supersedes, so that garbage is counted when it is made rather than when a
/// compaction later merges the versions (which, for keys in a deep level, may be never).
///
/// Every version of a key but the newest in `mem` is superseded by the newest; that newest
/// supersedes the newest entry of the key in `version` (the tree before this flush: older
/// memtables were flushed before, in order). By induction each stored value is reported
/// once, by the flush of the entry right above it, and a compaction that later drops it
/// reports nothing. Snapshots may still read a superseded value; the count only guides the
/// choice of segments, and relocation checks liveness itself. A failed lookup stops the
/// counting (it is a hint, not worth failing the flush for).
pub(crate) fn count_superseded(
    inner: &DbInner,
    mem: &Arc<dyn MemTable>,
    version: &Arc<Version>,
    edit: &mut VersionEdit,
) {
    let tree = Tree {
        values: inner.values.as_ref(),
        layout: inner.layout.as_ref(),
        tables: &inner.tables,
        version,
    };
    count_superseded_over(&tree, mem, &[], edit);
}

/// The older state a memtable's flush is counted against (recovery has no [`DbInner`] yet).
pub(crate) struct Tree<'a> {
    pub(crate) values: &'a dyn ValueStore,
    pub(crate) layout: &'a dyn Layout,
    pub(crate) tables: &'a Arc<TableCache>,
    /// The tables written before `mem` (and before every memtable in `older`).
    pub(crate) version: &'a Arc<Version>,
}

/// [`count_superseded`] for a flush of `mem` whose older entries are in `older` (memtables
/// written after `tree.version` and before `mem`, oldest first, not yet in any version: the
/// ones recovery replayed before `mem`) and then in `tree.version`.
pub(crate) fn count_superseded_over(
    tree: &Tree<'_>,
    mem: &Arc<dyn MemTable>,
    older: &[Arc<dyn MemTable>],
    edit: &mut VersionEdit,
) {
    if !tree.values.counts_superseded() {
        return;
    }
    let ctx = ReadContext {
        tables: tree.tables,
        cause: ReadCause::Gc,
    };
    // Only a superseded value pointer is garbage to count (a small value kept inline was
    // counted when it was logged). When no older table holds a pointer, as in a store of
    // small values, the tree lookup per flushed key (the cost of this counting) finds
    // nothing to count and is skipped.
    let look_up = !older.is_empty() || tree_holds_pointers(tree);
    let mut it = Arc::clone(mem).iter();
    if it.seek_to_first().is_err() {
        return;
    }
    let mut current: Option<Vec<u8>> = None;
    while it.valid() {
        let Ok(parsed) = parse_internal_key(it.key()) else {
            return;
        };
        if current.as_deref() == Some(parsed.user_key) {
            tree.values.superseded(parsed.kind, it.value(), edit);
        } else {
            if look_up {
                match newest_older(tree, &ctx, older, parsed.user_key) {
                    Ok(Some((kind, value))) => tree.values.superseded(kind, &value, edit),
                    Ok(None) => {}
                    Err(_) => return,
                }
            }
            current = Some(parsed.user_key.to_vec());
        }
        if it.next().is_err() {
            return;
        }
    }
}

/// Whether some table of `tree.version` holds a value pointer (its properties count them);
/// true when a table cannot be opened, so counting falls back to looking. A version with
/// more tables than the table cache holds is assumed to (nothing is opened): asking every
/// table at each flush would push out of the cache the tables reads are using, and reopen
/// each one flush after flush.
fn tree_holds_pointers(tree: &Tree<'_>) -> bool {
    if tree.version.files().count() > tree.tables.capacity() {
        return true;
    }
    tree.version.files().any(|(_, f)| {
        tree.tables
            .table(f.number)
            .map_or(true, |t| t.properties().num_value_pointers > 0)
    })
}

/// The newest entry of `key` in `older` (newest memtable first), then in `tree.version`;
/// `None` when there is none or it is a delete (which stores nothing).
fn newest_older(
    tree: &Tree<'_>,
    ctx: &ReadContext<'_>,
    older: &[Arc<dyn MemTable>],
    key: &[u8],
) -> Result<Option<(ValueKind, Vec<u8>)>> {
    for mem in older.iter().rev() {
        match mem.get(key, MAX_SEQNO) {
            Some(MemLookup::Found(kind, v)) => return Ok(Some((kind, v))),
            Some(MemLookup::Deleted) => return Ok(None),
            None => {}
        }
    }
    let seek = seek_key(key, MAX_SEQNO);
    Ok(tree
        .layout
        .get(tree.version, ctx, key, &seek)?
        .and_then(|(ikey, value)| Some((parse_internal_key(&ikey).ok()?.kind, value))))
}

/// Delete the files of zombies no reader can need any more.
pub(crate) fn reap(inner: &DbInner) {
    let oldest_snapshot = inner.snapshots.all().first().copied();
    let ready = {
        let mut zombies = inner.vlog_zombies.lock();
        let before = zombies.len();
        zombies.retain(|z| {
            let readers_gone = z
                .waits
                .as_ref()
                .is_some_and(|w| w.iter().all(|v| v.strong_count() == 0));
            let snapshots_gone = oldest_snapshot.is_none_or(|s| s >= z.gc_seq);
            !(readers_gone && snapshots_gone)
        });
        zombies.len() != before
    };
    if ready {
        super::background::delete_obsolete_files(inner);
    }
}

/// Remove from a directory listing the files still pinned by readers, before the sweep
/// offers it to the placement.
pub(crate) fn unpin(inner: &DbInner, names: &mut Vec<String>) {
    let zombies = inner.vlog_zombies.lock();
    names.retain(|n| !zombies.iter().any(|z| z.file == *n));
}

/// The garbage-collection thread: collects when a segment's garbage passes the ratio.
pub(crate) fn gc_thread(inner: Arc<DbInner>) {
    if !inner.values.wants_gc() {
        return;
    }
    loop {
        {
            let mut bg = inner.bg.lock();
            if inner.shutting_down.load(Ordering::Acquire) {
                return;
            }
            inner.bg_cv.wait_for(&mut bg, IDLE);
            if inner.shutting_down.load(Ordering::Acquire) {
                return;
            }
            if bg.error.is_some() {
                continue;
            }
        }
        // Errors that matter (a failed write or MANIFEST commit) already made the store
        // read-only; a read error leaves the segment for a later run.
        while let Ok(n) = run(&inner, false) {
            if n == 0 || inner.shutting_down.load(Ordering::Acquire) {
                break;
            }
        }
    }
}

#[cfg(test)]
#[path = "gc_tests.rs"]
mod tests;
