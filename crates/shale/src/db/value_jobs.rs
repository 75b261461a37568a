//! The engine's services to a value placement's background job (the value log's garbage
//! collection): the [`GcHost`] it works through, the thread that runs it, conditional
//! rewrites, files kept until no reader can see them, and counting at flush time what a
//! flush supersedes. Nothing here knows how a placement stores values.
//!
//! # Why a rewrite never resurrects a deleted key (Badger issue 2286)
//! A relocation is a *conditional* write made under the `wal` lock, which every user write
//! also holds while it is sequenced, logged and inserted. Under the lock, the newest entry of
//! the key (mutable memtable, frozen memtables, then the tree, all from the super version
//! the lock keeps consistent) must be a stored pointer holding exactly the bytes the
//! placement expects; only then is the value written again with the next sequence number. A
//! delete or overwrite sequenced before is seen, and the old copy is left to die; one
//! sequenced after gets a higher sequence number and hides the rewritten copy.
//!
//! # When a retired file is deleted
//! A file the placement retires ([`GcHost::retire`]) is registered as [`Retired`] before
//! the edit that retires it commits (so the obsolete-file sweep never sees the edit without
//! the pin), then records the versions alive at the commit. It is offered to the placement's
//! deletion once every one of those versions is gone (every read and iterator holds the
//! version of its super version, and one that started before the commit may hold an old
//! pointer) and no snapshot is older than the last rewrite.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use super::{DbInner, SuperVersion, write};
use crate::env::ReadCause;
use crate::error::Result;
use crate::key::{MAX_SEQNO, SeqNo, ValueKind, parse_internal_key, seek_key};
use crate::layout::{Layout, ReadContext};
use crate::manifest::{AxisRecord, VersionEdit};
use crate::memory::{MemLookup, MemTable};
use crate::table::cache::TableCache;
use crate::values::{GcHost, PersistedState, Relocation, ValueStore};
use crate::version::Version;
use crate::wal::WriteBatch;

/// A file a value placement retired, waiting for its last possible reader.
pub(crate) struct Retired {
    file: String,
    /// The last sequence number when the file was retired: snapshots below it may read it.
    gc_seq: SeqNo,
    /// The versions alive when the drop committed (`None` until then).
    waits: Option<Vec<Weak<Version>>>,
}

/// How often the thread looks for work when nothing wakes it.
const IDLE: Duration = Duration::from_millis(200);

/// The engine's services to one run of the placement's background job.
struct Host<'a> {
    inner: &'a Arc<DbInner>,
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
        // Every logged write must be visible before deciding what is still live: a newer
        // write of a key may be inserting right now.
        inner.wait_published(wal.last_assigned);
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
        write::log_and_apply(inner, &mut wal, &mut batch, true, false)?;
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
            .retired
            .lock()
            .extend(files.iter().map(|file| Retired {
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
                // The edit may or may not be in the MANIFEST: the files stay pinned.
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
                range_dels: Arc::clone(&sv.range_dels),
            });
        }
        drop(versions);
        for z in inner
            .retired
            .lock()
            .iter_mut()
            .filter(|z| files.contains(&z.file))
        {
            z.waits = Some(waits.clone());
        }
        Ok(())
    }

    fn closing(&self) -> bool {
        self.inner.shutting_down.load(Ordering::Acquire)
    }

    fn last_sequence(&self) -> SeqNo {
        self.inner.last_seq.load(Ordering::Acquire)
    }
}

/// Whether the newest entry of `r.key` in `sv` is a pointer to exactly `r`'s record.
fn points_to(inner: &DbInner, sv: &SuperVersion, r: &Relocation) -> Result<bool> {
    // The read a get makes, range tombstones included: a record whose key a range
    // tombstone deleted is dead (relocating it would write it again, newer than the
    // tombstone, and bring the key back).
    let found = super::read::lookup(inner, sv, &r.key, MAX_SEQNO, ReadCause::Gc.into())?;
    // A memtable's entry may carry the value after the pointer: the pointer is what names
    // the record.
    Ok(found.is_some_and(|(kind, stored)| {
        kind == ValueKind::ValuePointer
            && inner.values.table_value(kind, &stored) == r.pointer.as_slice()
    }))
}

/// Run the placement's job once (`force`: collect whatever garbage there is, whatever its
/// ratio), then delete the retired files no reader needs. Returns the files the run retired.
pub(crate) fn run(inner: &Arc<DbInner>, force: bool) -> Result<u64> {
    let _one = inner.value_job_lock.lock();
    let host = Host { inner };
    let r = match inner.values.gc() {
        Some(gc) => gc.collect_garbage(&host, force),
        None => Ok(0),
    };
    reap(inner);
    r
}

/// Before a flush of `mem` commits `edit`: report to the placement every stored value the
/// flush supersedes, so that garbage is counted when it is made rather than when a
/// compaction later merges the versions (which, for keys in a deep level, may be never).
///
/// Every version of a key but the newest in `mem` is superseded by the newest; that newest
/// supersedes the newest entry of the key in `older` (the memtables flushed together with
/// `mem` and older than it, oldest first) or else in `version` (the tree before this flush:
/// older memtables were flushed before, in order). By induction each stored value is reported
/// once, by the flush of the entry right above it, and a compaction that later drops it
/// reports nothing. Snapshots may still read a superseded value; the count only guides the
/// placement's choices, and a rewrite checks liveness itself. A failed lookup stops the
/// counting (it is a hint, not worth failing the flush for).
pub(crate) fn count_superseded(
    inner: &DbInner,
    mem: &Arc<dyn MemTable>,
    older: &[Arc<dyn MemTable>],
    version: &Arc<Version>,
    edit: &mut VersionEdit,
) {
    let tree = Tree {
        values: inner.values.as_ref(),
        layout: inner.layout.as_ref(),
        tables: &inner.tables,
        version,
    };
    count_superseded_over(&tree, mem, older, edit);
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
    let Some(gc) = tree.values.gc() else {
        return;
    };
    let ctx = ReadContext {
        tables: tree.tables,
        read: ReadCause::Gc.into(),
    };
    // When no older table may hold what the placement counts (for the value log: a store
    // of small values, kept inline), the tree lookup per flushed key (the cost of this
    // counting) would find nothing to count and is skipped.
    let look_up = !older.is_empty() || tree_may_count(tree);
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
            gc.superseded(parsed.kind, it.value(), edit);
        } else {
            if look_up {
                match newest_older(tree, &ctx, older, parsed.user_key) {
                    Ok(Some((kind, value))) => gc.superseded(kind, &value, edit),
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

/// Whether some table of `tree.version` may hold values the placement counts (asked by its
/// properties, [`crate::values::ValueGc::may_count_in`]); true when a table cannot be opened, so counting falls back to looking. A version with
/// more tables than the table cache holds is assumed to (nothing is opened): asking every
/// table at each flush would push out of the cache the tables reads are using, and reopen
/// each one flush after flush.
fn tree_may_count(tree: &Tree<'_>) -> bool {
    if tree.version.files().count() > tree.tables.capacity() {
        return true;
    }
    tree.version.files().any(|(_, f)| {
        tree.tables.table(f.table_id()).map_or(true, |t| {
            tree.values
                .gc()
                .is_none_or(|gc| gc.may_count_in(t.properties()))
        })
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

/// Offer for deletion the retired files no reader can need any more.
pub(crate) fn reap(inner: &DbInner) {
    let oldest_snapshot = inner.snapshots.all().first().copied();
    let ready = {
        let mut retired = inner.retired.lock();
        let before = retired.len();
        retired.retain(|z| {
            let readers_gone = z
                .waits
                .as_ref()
                .is_some_and(|w| w.iter().all(|v| v.strong_count() == 0));
            let snapshots_gone = oldest_snapshot.is_none_or(|s| s >= z.gc_seq);
            !(readers_gone && snapshots_gone)
        });
        retired.len() != before
    };
    if ready {
        super::background::delete_obsolete_files(inner);
    }
}

/// Remove from a directory listing the files still pinned by readers, before the sweep
/// offers it to the placement.
pub(crate) fn unpin(inner: &DbInner, names: &mut Vec<String>) {
    let retired = inner.retired.lock();
    names.retain(|n| !retired.iter().any(|z| z.file == *n));
}

/// The thread of the placement's background job (only for a placement that wants one).
pub(crate) fn value_job_thread(inner: Arc<DbInner>) {
    if !inner.values.gc().is_some_and(|gc| gc.wants_gc()) {
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
