//! Background work: flushing frozen memtables, running compactions, deleting obsolete files.
//!
//! Every change to the set of files follows one protocol: write the new files and sync them
//! (and their directory), commit a version edit to the MANIFEST (the commit point), install
//! the new version, and only then delete files that no live version lists.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::open::{FileKind, parse_file_name};
use super::{DbInner, SuperVersion};
use crate::compaction::{CompactionContext, MergeSpec, merge_into_tables};
use crate::env::WriteCause;
use crate::error::{Error, Result};
use crate::layout::{Plan, PlanKind};
use crate::manifest::VersionEdit;
use crate::memory::MemTable;
use crate::version::FileMeta;

/// Write a memtable to a new table file, synced (a memtable is bounded in size, so one file
/// holds it). Returns nothing for an empty memtable.
pub(crate) fn write_memtable(
    mem: &Arc<dyn MemTable>,
    ctx: &CompactionContext<'_>,
) -> Result<Option<FileMeta>> {
    if mem.is_empty() {
        return Ok(None);
    }
    // Tombstones are kept: older versions of their keys may sit in the tables below.
    let spec = MergeSpec {
        target_file_size: u64::MAX,
        is_base_for_key: &|_| false,
    };
    let mut it = Arc::clone(mem).iter();
    let (mut files, _) = merge_into_tables(&mut it, &spec, ctx)?;
    Ok(files.pop())
}

/// Run `f` with a compaction context over the store's current state.
fn with_context<T>(
    inner: &DbInner,
    cause: WriteCause,
    f: impl FnOnce(&CompactionContext<'_>) -> T,
) -> T {
    let version = inner.super_version().version.clone();
    let snapshots = inner.snapshots.all();
    let new_file = || inner.new_output_number();
    let ctx = CompactionContext {
        env: &inner.env,
        dir: &inner.dir,
        table_options: &inner.options.table,
        tables: &inner.tables,
        version: &version,
        snapshots: &snapshots,
        new_file_number: &new_file,
        stop: &inner.shutting_down,
        cause,
        on_discard: &|kind, stored| inner.values.discarded(kind, stored),
    };
    f(&ctx)
}

/// Commit `edit`, install the version it makes, and run `after` under the `bg` lock (before
/// waking anyone). Returns nothing; errors make the store read-only.
fn commit(
    inner: &DbInner,
    edit: VersionEdit,
    after: impl FnOnce(&mut super::BgState, &mut Vec<Arc<dyn MemTable>>),
) -> Result<()> {
    let outputs: Vec<u64> = edit.new_files.iter().map(|(_, f)| f.number).collect();
    let mut edit = edit;
    inner.values.note_edit(&mut edit);
    let mut versions = inner.versions.lock();
    let last_seq = inner.last_seq.load(Ordering::Acquire);
    let version = versions.log_and_apply(edit, last_seq);
    let version = match version {
        Ok(v) => v,
        Err(e) => {
            drop(versions);
            inner.set_error(&e);
            return Err(e);
        }
    };
    let mut bg = inner.bg.lock();
    {
        let mut sv = inner.super_version.write();
        let mut imms = sv.imms.clone();
        after(&mut bg, &mut imms);
        *sv = Arc::new(SuperVersion {
            mem: Arc::clone(&sv.mem),
            imms,
            version,
        });
    }
    {
        let mut pending = inner.pending_outputs.lock();
        for n in outputs {
            pending.remove(&n);
        }
    }
    bg.compaction_wanted = true;
    inner.bg_cv.notify_all();
    Ok(())
}

/// Flush the oldest frozen memtable. Requires that no other flush runs (the flush thread,
/// or `flush_and_wait` through it).
fn flush_one(inner: &DbInner) -> Result<bool> {
    let (mem, log_end) = {
        let bg = inner.bg.lock();
        match bg.imms.front() {
            Some(imm) => (Arc::clone(&imm.mem), imm.log_end),
            None => return Ok(false),
        }
    };
    let file = match with_context(inner, WriteCause::Flush, |ctx| write_memtable(&mem, ctx)) {
        Ok(f) => f,
        Err(e) => {
            if !matches!(e, Error::Closed) {
                inner.set_error(&e);
            }
            return Err(e);
        }
    };
    // Every write before `log_end` is now in a table.
    let mut edit = VersionEdit::default();
    if let Err(e) = inner.values.flushed(log_end, &mut edit) {
        inner.set_error(&e);
        return Err(e);
    }
    let size = file.as_ref().map_or(0, |f| f.size);
    if let Some(f) = file {
        let level = inner.layout.flush_level(&inner.super_version().version, &f);
        edit.new_files.push((level as u32, f));
    }
    commit(inner, edit, |bg, imms| {
        bg.imms.pop_front();
        imms.retain(|m| !Arc::ptr_eq(m, &mem));
    })?;
    inner.counters.flushes.fetch_add(1, Ordering::Relaxed);
    record_level(inner, 0, 0, 0, size);
    delete_obsolete_files(inner);
    Ok(true)
}

/// Count one flush or compaction into `level`: bytes read (all inputs), bytes of those
/// inputs that came from shallower levels, bytes written.
fn record_level(inner: &DbInner, level: usize, read: u64, moved_in: u64, written: u64) {
    let mut per = inner.counters.per_level.lock();
    if per.len() <= level {
        per.resize(level + 1, super::LevelCounters::default());
    }
    if let Some(e) = per.get_mut(level) {
        e.read += read;
        e.moved_in += moved_in;
        e.written += written;
        e.count += 1;
    }
}

pub(crate) fn flush_thread(inner: Arc<DbInner>) {
    loop {
        {
            let mut bg = inner.bg.lock();
            while bg.imms.is_empty() || bg.error.is_some() {
                if inner.shutting_down.load(Ordering::Acquire) {
                    return;
                }
                inner.bg_cv.wait(&mut bg);
            }
            if inner.shutting_down.load(Ordering::Acquire) {
                return;
            }
            bg.flushing = true;
        }
        let r = flush_one(&inner);
        let mut bg = inner.bg.lock();
        bg.flushing = false;
        inner.bg_cv.notify_all();
        if r.is_err() {
            // The error is recorded; the loop waits for shutdown.
            continue;
        }
    }
}

/// Freeze the memtable (if it holds anything) and wait until every frozen memtable is
/// flushed.
pub(crate) fn flush_and_wait(inner: &Arc<DbInner>) -> Result<()> {
    {
        let mut wal = inner.wal.lock();
        inner.check_writable()?;
        super::write::make_room(inner, &mut wal, true)?;
    }
    let mut bg = inner.bg.lock();
    loop {
        if let Some(e) = &bg.error {
            return Err(Error::ReadOnly(e.clone()));
        }
        if bg.imms.is_empty() && !bg.flushing {
            return Ok(());
        }
        if inner.shutting_down.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        inner.bg_cv.wait(&mut bg);
    }
}

/// Run one plan: execute it and commit its edit.
fn run_plan(inner: &DbInner, plan: &Plan) -> Result<()> {
    let edit = match with_context(inner, WriteCause::Compaction, |ctx| {
        inner.layout.compact(plan, ctx)
    }) {
        Ok(e) => e,
        Err(e) => {
            if !matches!(e, Error::Closed) {
                inner.set_error(&e);
            }
            return Err(e);
        }
    };
    let written: u64 = if plan.kind == PlanKind::Move {
        0
    } else {
        edit.new_files.iter().map(|(_, f)| f.size).sum()
    };
    let (read, moved_in) = if plan.kind == PlanKind::Move {
        (0, 0)
    } else {
        let upper: u64 = plan
            .input_files()
            .filter(|(l, _)| *l < plan.output_level)
            .map(|(_, f)| f.size)
            .sum();
        (plan.input_bytes(), upper)
    };
    commit(inner, edit, |_, _| {})?;
    inner.counters.compactions.fetch_add(1, Ordering::Relaxed);
    record_level(inner, plan.output_level, read, moved_in, written);
    delete_obsolete_files(inner);
    Ok(())
}

pub(crate) fn compaction_thread(inner: Arc<DbInner>) {
    loop {
        {
            let mut bg = inner.bg.lock();
            while !bg.compaction_wanted || bg.error.is_some() {
                if inner.shutting_down.load(Ordering::Acquire) {
                    return;
                }
                inner.bg_cv.wait(&mut bg);
            }
            if inner.shutting_down.load(Ordering::Acquire) {
                return;
            }
            bg.compaction_wanted = false;
        }
        loop {
            let _c = inner.compaction_lock.lock();
            // The version is dropped before the plan runs: the sweep after the commit must
            // not see it as live, or the inputs would outlive the compaction.
            let Some(plan) = inner.layout.pick(&inner.super_version().version) else {
                break;
            };
            if run_plan(&inner, &plan).is_err() || inner.shutting_down.load(Ordering::Acquire) {
                break;
            }
        }
    }
}

/// Manual compaction of `[begin, end]`: flush, then push the range down level by level.
pub(crate) fn compact_range(
    inner: &Arc<DbInner>,
    begin: Option<&[u8]>,
    end: Option<&[u8]>,
) -> Result<()> {
    flush_and_wait(inner)?;
    let _c = inner.compaction_lock.lock();
    let levels = inner.options.num_levels;
    // The deepest level holding anything in the range: compaction stops there.
    let deepest = {
        let v = inner.super_version().version.clone();
        (0..levels)
            .rev()
            .find(|&l| !v.overlapping(l, begin, end).is_empty())
    };
    let Some(deepest) = deepest else {
        return Ok(());
    };
    // Push the range from every level above the deepest one holding it into the next
    // (as LevelDB does); level-0 data goes at least to level 1.
    for level in 0..deepest.max(1).min(levels - 1) {
        inner.check_writable()?;
        let plan = inner
            .layout
            .pick_range(&inner.super_version().version, level, begin, end);
        if let Some(plan) = plan {
            run_plan(inner, &plan)?;
        }
    }
    Ok(())
}

/// Delete files no live version needs: tables not listed by any version held by anyone,
/// logs older than the log number, MANIFESTs older than the live one. Errors are ignored
/// (a file left behind is deleted at the next sweep or open).
pub(crate) fn delete_obsolete_files(inner: &DbInner) {
    // List first, then read what is live: a file is registered as a pending output before it
    // is created and leaves that set only once a version lists it (both under the versions
    // lock), so every listed file that is still needed shows up in one of the two sets.
    let Ok(names) = inner.env.fs().list_dir(&inner.dir) else {
        return;
    };
    let (live, pending, mut placement, manifest_number) = {
        let mut v = inner.versions.lock();
        let pending = inner.pending_outputs.lock().clone();
        (
            v.live_files(),
            pending,
            v.placement().clone(),
            v.manifest_number(),
        )
    };
    super::gc::unpin(inner, &mut placement);
    inner.values.delete_obsolete(&names, &placement);
    for name in names {
        let Some(kind) = parse_file_name(&name) else {
            continue;
        };
        let obsolete = match kind {
            FileKind::Table(n) => !live.contains(&n) && !pending.contains(&n),
            // The durability log is the value placement's business (above).
            FileKind::Log(_) | FileKind::Segment(_) => false,
            // Only older ones: a newer MANIFEST is left by a switch that failed after CURRENT
            // may already name it (the rename done, the directory sync failed); the next
            // open starts another MANIFEST and removes both.
            FileKind::Manifest(n) => n < manifest_number,
            // A temporary file may belong to a CURRENT update in progress: only open removes it.
            FileKind::Temp => false,
        };
        if obsolete {
            if let FileKind::Table(n) = kind {
                inner.tables.evict(n);
            }
            let _ = inner.env.fs().remove_file(&inner.dir.join(&name));
        }
    }
}
