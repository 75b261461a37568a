//! Background work: flushing frozen memtables, running compactions, deleting obsolete files.
//!
//! Every change to the set of files follows one protocol: write the new files and sync them
//! (and their directory), commit a version edit to the MANIFEST (the commit point), install
//! the new version, and only then delete files that no live version lists.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{DbInner, SuperVersion};
use crate::compaction::CompactionContext;
use crate::compaction::filter::FilterHook;
use crate::env::WriteCause;
use crate::error::{Error, Result};
use crate::filename::{FileKind, parse_file_name};
use crate::iter::InternalIterator;
use crate::key::SeqNo;
use crate::layout::{PickContext, Plan, PlanKind};
use crate::manifest::VersionEdit;
use crate::memory::MemTable;
use crate::values::ValueStore;

/// Seal a frozen memtable whose inserts have all returned and hand it to the layout's flush
/// (nothing for an empty one): the edit adding the files it wrote, synced.
pub(crate) fn flush_memtable(
    layout: &dyn crate::layout::Layout,
    values: &dyn ValueStore,
    mem: &Arc<dyn MemTable>,
    ctx: &CompactionContext<'_>,
) -> Result<VersionEdit> {
    flush_memtables(layout, values, std::slice::from_ref(mem), ctx)
}

/// [`flush_memtable`] for several frozen memtables written out as one
/// ([`crate::Options::min_memtables_to_merge`]): the layout's flush reads their entries
/// merged into one stream in internal-key order (their sequence numbers differ, so no two
/// entries tie), as it reads one memtable's. Either way the layout sees each entry's value
/// as `values` writes it to a table ([`ValueStore::table_value`]: without a value the
/// memtable carries beside its pointer).
pub(crate) fn flush_memtables(
    layout: &dyn crate::layout::Layout,
    values: &dyn ValueStore,
    mems: &[Arc<dyn MemTable>],
    ctx: &CompactionContext<'_>,
) -> Result<VersionEdit> {
    for m in mems {
        m.seal();
    }
    let mut full = mems.iter().filter(|m| !m.is_empty());
    match (full.next(), full.next()) {
        (None, _) => Ok(VersionEdit::default()),
        (Some(one), None) => layout.flush(
            &mut TableValues {
                inner: Arc::clone(one).iter(),
                values,
            },
            ctx,
        ),
        (Some(_), Some(_)) => {
            let children = mems
                .iter()
                .filter(|m| !m.is_empty())
                .map(|m| Arc::clone(m).iter())
                .collect();
            layout.flush(
                &mut TableValues {
                    inner: Box::new(crate::iter::merging::MergingIterator::new(children)),
                    values,
                },
                ctx,
            )
        }
    }
}

/// A memory component's entries as a flush writes them: each value as
/// [`ValueStore::table_value`] gives it.
struct TableValues<'a> {
    inner: Box<dyn InternalIterator + 'a>,
    values: &'a dyn ValueStore,
}

impl InternalIterator for TableValues<'_> {
    fn valid(&self) -> bool {
        self.inner.valid()
    }
    fn seek_to_first(&mut self) -> Result<()> {
        self.inner.seek_to_first()
    }
    fn seek_to_last(&mut self) -> Result<()> {
        self.inner.seek_to_last()
    }
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.inner.seek(target)
    }
    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        self.inner.seek_for_prev(target)
    }
    fn next(&mut self) -> Result<()> {
        self.inner.next()
    }
    fn prev(&mut self) -> Result<()> {
        self.inner.prev()
    }
    fn key(&self) -> &[u8] {
        self.inner.key()
    }
    fn value(&self) -> &[u8] {
        let stored = self.inner.value();
        // A key the memtable holds is well formed; one that is not keeps its bytes, and
        // the table builder reports it.
        match crate::key::parse_internal_key(self.inner.key()) {
            Ok(k) => self.values.table_value(k.kind, stored),
            Err(_) => stored,
        }
    }
}

/// The oldest frozen memtables a flush was asked for ([`super::BgState::flush_through`]).
fn requested(bg: &super::BgState) -> usize {
    bg.imms
        .iter()
        .take_while(|i| i.freeze_no <= bg.flush_through)
        .count()
}

/// Whether a flush will run without another write: there are
/// [`crate::Options::min_memtables_to_merge`] frozen memtables, or a flush was asked for
/// ([`super::BgState::flush_through`]), or those frozen will be flushed when their
/// [`crate::Options::memtable_merge_timeout`] runs out.
pub(crate) fn flush_due(bg: &super::BgState, options: &crate::Options) -> bool {
    !bg.imms.is_empty()
        && (bg.imms.len() >= options.min_memtables_to_merge
            || requested(bg) > 0
            || options.memtable_merge_timeout.is_some())
}

/// How long the flush thread waits before it flushes the frozen memtables there are:
/// zero when a flush is due now, `None` when nothing is frozen or they wait for more for
/// ever.
fn flush_wait(bg: &super::BgState, options: &crate::Options) -> Option<std::time::Duration> {
    if bg.imms.is_empty() {
        return None;
    }
    if bg.imms.len() >= options.min_memtables_to_merge || requested(bg) > 0 {
        return Some(std::time::Duration::ZERO);
    }
    let timeout = options.memtable_merge_timeout?;
    let waited = bg.last_freeze.map_or(timeout, |t| t.elapsed());
    Some(timeout.saturating_sub(waited))
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
    let filter = inner
        .options
        .compaction_filter
        .as_deref()
        .map(|filter| FilterHook {
            filter,
            values: inner.values.as_ref(),
        });
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
        check_new_tables: inner.options.verify_new_tables,
        filter,
    };
    f(&ctx)
}

/// Commit `edit`, install the version it makes, and run `after` under the `bg` lock (before
/// waking anyone). Returns nothing; errors make the store read-only.
///
/// A flush passes the last sequence number of its memtable as `flushed_upto`: the range
/// tombstones written into it (those of the super version up to that number) go into the
/// edit and leave the super version's list in the same step that installs the version
/// holding them. Every commit also drops the flushed range tombstones the new version no
/// longer needs ([`crate::version::Version::obsolete_range_dels`]).
fn commit(
    inner: &DbInner,
    edit: VersionEdit,
    flushed_upto: Option<SeqNo>,
    after: impl FnOnce(&mut super::BgState, &mut Vec<Arc<dyn MemTable>>),
) -> Result<()> {
    let outputs: Vec<u64> = edit.new_files.iter().map(|(_, f)| f.number).collect();
    let mut edit = edit;
    inner.values.note_edit(&mut edit);
    if let Some(upto) = flushed_upto {
        let sv = inner.super_version();
        edit.range_dels.extend(
            sv.range_dels
                .tombstones()
                .iter()
                .filter(|t| t.seq <= upto)
                .cloned(),
        );
    }
    let mut versions = inner.versions.lock();
    drop_obsolete_range_dels(&versions.current(), &mut edit);
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
        let range_dels = match flushed_upto {
            Some(upto) => Arc::new(sv.range_dels.without(|t| t.seq <= upto)),
            None => Arc::clone(&sv.range_dels),
        };
        *sv = Arc::new(SuperVersion {
            mem: Arc::clone(&sv.mem),
            imms,
            version,
            range_dels,
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

/// Add to `edit` the removal of every flushed range tombstone that the version `edit` makes
/// from `current` no longer needs. Nothing when there are none, or when the edit does not
/// fit (the commit reports that).
fn drop_obsolete_range_dels(current: &crate::version::Version, edit: &mut VersionEdit) {
    if current.range_dels().is_empty() && edit.range_dels.is_empty() {
        return;
    }
    if let Ok(next) = current.apply(edit) {
        let obsolete = next.obsolete_range_dels();
        // One the edit itself adds (a flush's, covering nothing older) is simply not added.
        edit.range_dels.retain(|t| !obsolete.contains(&t.seq));
        edit.dropped_range_dels
            .extend(obsolete.into_iter().filter(|s| {
                current
                    .range_dels()
                    .tombstones()
                    .iter()
                    .any(|t| t.seq == *s)
            }));
    }
}

/// Flush the oldest frozen memtables as one: [`crate::Options::min_memtables_to_merge`] of
/// them (one by default), at least those a flush was asked for when they merge, or all
/// there are once the timeout ran out. So each flush of a store that does not merge writes
/// exactly one memtable, as before the option existed. Requires that no other flush runs
/// (the flush thread, or `flush_and_wait` through it). Returns the newest flushed
/// memtable's `freeze_no`, or `None` when nothing was frozen.
fn flush_one(inner: &DbInner) -> Result<Option<u64>> {
    let merge = inner.options.min_memtables_to_merge;
    let (mems, log_end, last_seq, newest_no) = {
        let bg = inner.bg.lock();
        let (len, asked) = (bg.imms.len(), requested(&bg));
        let n = if merge == 1 {
            1
        } else if asked > 0 {
            asked.max(merge.min(len))
        } else {
            // Fewer than `merge` only after the timeout: then all.
            merge.min(len)
        };
        match bg.imms.get(n.wrapping_sub(1)) {
            Some(newest) => (
                bg.imms
                    .iter()
                    .take(n)
                    .map(|i| Arc::clone(&i.mem))
                    .collect::<Vec<_>>(),
                newest.log_end,
                newest.last_seq,
                newest.freeze_no,
            ),
            None => return Ok(None),
        }
    };
    // Writes logged for the memtables before they froze may still be inserting (the
    // newest's last sequence number covers the older ones').
    inner.wait_published(last_seq);
    let mut edit = match with_context(inner, WriteCause::Flush, |ctx| {
        flush_memtables(inner.layout.as_ref(), inner.values.as_ref(), &mems, ctx)
    }) {
        Ok(e) => e,
        Err(e) => {
            if !matches!(e, Error::Closed) {
                inner.set_error(&e);
            }
            return Err(e);
        }
    };
    // Bytes written per level (a flush that wrote nothing counts at level 0).
    let mut written = std::collections::BTreeMap::<usize, u64>::new();
    for (l, f) in &edit.new_files {
        *written.entry(*l as usize).or_default() += f.size;
    }
    if written.is_empty() {
        written.insert(0, 0);
    }
    // Every write before `log_end` is now in a table.
    if let Err(e) = inner.values.flushed(log_end, &mut edit) {
        inner.set_error(&e);
        return Err(e);
    }
    let version = inner.super_version().version.clone();
    for (i, mem) in mems.iter().enumerate() {
        let older = mems.get(..i).unwrap_or_default();
        super::value_jobs::count_superseded(inner, mem, older, &version, &mut edit);
    }
    commit(inner, edit, Some(last_seq), |bg, imms| {
        bg.imms.drain(..mems.len().min(bg.imms.len()));
        imms.retain(|m| !mems.iter().any(|f| Arc::ptr_eq(m, f)));
    })?;
    inner.counters.flushes.fetch_add(1, Ordering::Relaxed);
    for (level, size) in written {
        record_level(inner, level, 0, 0, size);
    }
    delete_obsolete_files(inner);
    Ok(Some(newest_no))
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
            loop {
                if inner.shutting_down.load(Ordering::Acquire) {
                    return;
                }
                let wait = flush_wait(&bg, &inner.options);
                match wait {
                    Some(w) if w.is_zero() && bg.error.is_none() => break,
                    // Frozen memtables waiting for more: until their timeout, or a change.
                    Some(w) if bg.error.is_none() => {
                        inner.bg_cv.wait_for(&mut bg, w);
                    }
                    _ => inner.bg_cv.wait(&mut bg),
                }
            }
            if inner.shutting_down.load(Ordering::Acquire) {
                return;
            }
            bg.flushing = true;
        }
        let r = flush_one(&inner);
        let mut bg = inner.bg.lock();
        bg.flushing = false;
        // Flushed, committed and swept: what `Db::flush` waits for.
        if let Ok(Some(n)) = r {
            bg.flushed_through = bg.flushed_through.max(n);
        }
        inner.bg_cv.notify_all();
        if r.is_err() {
            // The error is recorded; the loop waits for shutdown.
            continue;
        }
    }
}

/// Freeze the memtable (if it holds anything) and wait until every memtable frozen so far
/// is flushed, without waiting for more to merge with (RocksDB's `Flush`). Memtables
/// other writers freeze meanwhile are not waited for.
pub(crate) fn flush_and_wait(inner: &Arc<DbInner>) -> Result<()> {
    {
        let mut wal = inner.wal.lock();
        inner.check_writable()?;
        super::write::make_room(inner, &mut wal, true)?;
    }
    let mut bg = inner.bg.lock();
    let target = bg.freezes;
    if bg.flush_through < target {
        bg.flush_through = target;
        inner.bg_cv.notify_all();
    }
    loop {
        if let Some(e) = &bg.error {
            return Err(Error::ReadOnly(e.clone()));
        }
        // Memtables are flushed oldest first; a flush is done once its files are committed
        // and what it made obsolete (the log before it) deleted.
        if bg.flushed_through >= target {
            return Ok(());
        }
        if inner.shutting_down.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        inner.bg_cv.wait(&mut bg);
    }
}

/// Wait until nothing runs and nothing will start before the next write: no flush is due
/// (frozen memtables may remain only where they wait for ever for more to merge with), no
/// compaction runs or still deletes its inputs, and the last pick found nothing
/// (the state in which the `shale.*-pending` properties and
/// `shale.num-running-compactions` all read 0). Returns at once on a read-only handle.
pub(crate) fn wait_settled(inner: &DbInner) -> Result<()> {
    if inner.read_only {
        return Ok(());
    }
    let mut bg = inner.bg.lock();
    loop {
        if let Some(e) = &bg.error {
            return Err(Error::ReadOnly(e.clone()));
        }
        let busy = flush_due(&bg, &inner.options)
            || bg.flushing
            || !bg.running.is_empty()
            || bg.sweeping > 0
            || bg.compaction_wanted
            || bg.manual;
        if !busy {
            return Ok(());
        }
        if inner.shutting_down.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        inner.bg_cv.wait(&mut bg);
    }
}

/// Run one plan: execute it and commit its edit. `ticket` names the plan in
/// `BgState::running` (background plans): it leaves that list under the `bg` lock together
/// with the installation of the version it made, so a picker never sees the plan gone
/// without its result.
fn run_plan(inner: &DbInner, plan: &Plan, ticket: Option<u64>) -> Result<()> {
    let executed = match plan.kind {
        PlanKind::Move => Ok(plan.move_edit()),
        PlanKind::Merge | PlanKind::Append => with_context(inner, WriteCause::Compaction, |ctx| {
            inner.layout.compact(plan, ctx)
        }),
    };
    let edit = match executed {
        Ok(e) => e,
        Err(e) => {
            if !matches!(e, Error::Closed) {
                inner.set_error(&e);
            }
            return Err(e);
        }
    };
    // A move neither reads nor writes; an append reads its upper inputs and writes the
    // growth of the files it appends to.
    let (read, moved_in, written) = plan.io_of(&edit);
    // The edit was made from an older version than the one it is applied to when other
    // plans committed meanwhile. It still fits: it deletes only this plan's inputs, which no
    // other plan may touch while they are busy, and adds files with fresh numbers.
    //
    // A background plan leaves the running list with its commit and counts as sweeping
    // until its inputs are deleted: until then the store is not settled (`wait_settled`),
    // so a caller who waited sees no obsolete file left.
    commit(inner, edit, None, |bg, _| {
        if let Some(t) = ticket {
            bg.running.retain(|(n, _)| *n != t);
            bg.sweeping += 1;
        }
    })?;
    inner.counters.compactions.fetch_add(1, Ordering::Relaxed);
    record_level(inner, plan.output_level, read, moved_in, written);
    #[cfg(test)]
    gate::before_sweep(inner, ticket.is_some());
    delete_obsolete_files(inner);
    if ticket.is_some() {
        let mut bg = inner.bg.lock();
        bg.sweeping = bg.sweeping.saturating_sub(1);
        inner.bg_cv.notify_all();
    }
    Ok(())
}

/// Wait for a plan that may run beside the running ones, and mark it running. `None` at
/// shutdown.
fn next_plan(inner: &DbInner) -> Option<(u64, Plan)> {
    let mut bg = inner.bg.lock();
    loop {
        if inner.shutting_down.load(Ordering::Acquire) {
            return None;
        }
        if bg.compaction_wanted && bg.error.is_none() && !bg.manual {
            // Under the `bg` lock the running list and the current version agree: a plan
            // leaves the list only in the same critical section that installs its result.
            let running = PickContext::of_plans(bg.running.iter().map(|(_, p)| p));
            let picked = inner.layout.pick(&inner.super_version().version, &running);
            match picked {
                Some(plan) => {
                    let ticket = bg.next_ticket;
                    bg.next_ticket += 1;
                    bg.running.push((ticket, plan.clone()));
                    // `compaction_wanted` stays set: another worker may find a disjoint plan.
                    inner.bg_cv.notify_all();
                    return Some((ticket, plan));
                }
                None => {
                    bg.compaction_wanted = false;
                    // `wait_settled` may be waiting for exactly this.
                    inner.bg_cv.notify_all();
                    #[cfg(test)]
                    gate::starved(inner, &mut bg);
                }
            }
        }
        inner.bg_cv.wait(&mut bg);
    }
}

/// A background plan in flight. Dropping it (also when its worker panics) takes the plan off
/// the running list if its commit did not already, and then wakes the others: its inputs
/// and range are free, so a plan that conflicted with it may run now (a commit wakes them
/// itself).
struct Ticket<'a>(&'a DbInner, u64);

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        let mut bg = self.0.bg.lock();
        let before = bg.running.len();
        bg.running.retain(|(n, _)| *n != self.1);
        // A committed plan left the list in its commit, which also asked for a new pick; asking
        // again here would turn a store that `wait_settled` saw settled busy again for no work.
        if bg.running.len() != before {
            bg.compaction_wanted = true;
            self.0.bg_cv.notify_all();
        }
    }
}

/// One of the `max_background_compactions` workers: pick under the `bg` lock, run without
/// it, commit, release, repeat until shutdown. After a failure the store is read-only and
/// `next_plan` picks nothing more.
pub(crate) fn compaction_thread(inner: Arc<DbInner>) {
    while let Some((ticket, plan)) = next_plan(&inner) {
        let ticket = Ticket(&inner, ticket);
        #[cfg(test)]
        gate::wait(&inner);
        // The result is recorded (a failure makes the store read-only): nothing to do here.
        let _ = run_plan(&inner, &plan, Some(ticket.1));
    }
}

/// Held by a manual compaction: background workers start nothing meanwhile.
struct ManualGuard<'a>(&'a DbInner);

impl<'a> ManualGuard<'a> {
    /// Stop workers from starting plans and wait until the running ones are done.
    fn enter(inner: &'a DbInner) -> Result<ManualGuard<'a>> {
        let mut bg = inner.bg.lock();
        bg.manual = true;
        // Wake whatever holds a plan for a reason the manual compaction changes (the test
        // gate lets its plan go).
        inner.bg_cv.notify_all();
        loop {
            if let Some(e) = &bg.error {
                let e = Error::ReadOnly(e.clone());
                drop(bg);
                drop(ManualGuard(inner));
                return Err(e);
            }
            // Running plans end even at shutdown (they stop early) or after a failure.
            if bg.running.is_empty() {
                return Ok(ManualGuard(inner));
            }
            inner.bg_cv.wait(&mut bg);
        }
    }
}

impl Drop for ManualGuard<'_> {
    fn drop(&mut self) {
        let mut bg = self.0.bg.lock();
        bg.manual = false;
        bg.compaction_wanted = true;
        self.0.bg_cv.notify_all();
    }
}

/// Manual compaction of `[begin, end]`: flush, then push the range down level by level.
///
/// It runs alone (RocksDB's exclusive manual compaction): workers start no new plan while it
/// waits or runs, and it starts once the running plans are done. Its plans then take every
/// overlapping file of a level without checking for busy ones. Two manual compactions take
/// turns on `compaction_lock`.
pub(crate) fn compact_range(
    inner: &Arc<DbInner>,
    begin: Option<&[u8]>,
    end: Option<&[u8]>,
) -> Result<()> {
    flush_and_wait(inner)?;
    let _c = inner.compaction_lock.lock();
    let _manual = ManualGuard::enter(inner)?;
    let steps = {
        let v = inner.super_version().version.clone();
        inner.layout.range_steps(&v, begin, end)
    };
    for step in steps {
        inner.check_writable()?;
        let plan = inner
            .layout
            .pick_range(&inner.super_version().version, step, begin, end);
        if let Some(plan) = plan {
            run_plan(inner, &plan, None)?;
        }
    }
    // With a filter, what no step merged must meet it too; so must the entries of the range
    // that flushed range tombstones hide (the deepest level is merged only by this, and
    // their space is reclaimed there).
    let range_deleted = {
        let v = inner.super_version().version.clone();
        v.range_dels().tombstones().iter().any(|t| {
            begin.is_none_or(|b| t.end.as_slice() > b)
                && end.is_none_or(|e| t.start.as_slice() <= e)
        })
    };
    if inner.options.compaction_filter.is_some() || range_deleted {
        inner.check_writable()?;
        let plan = inner
            .layout
            .pick_bottom(&inner.super_version().version, begin, end);
        if let Some(plan) = plan {
            run_plan(inner, &plan, None)?;
        }
    }
    Ok(())
}

/// Delete files no live version needs: tables not listed by any version held by anyone
/// (unless they are provably another store's, [`crate::table::TableCache::foreign`]),
/// logs older than the log number, MANIFESTs older than the live one. Errors are ignored
/// (a file left behind is deleted at the next sweep or open).
///
/// Nothing is deleted unless the store's lock still excludes every other opener
/// ([`crate::env::FileLock::check`], under the lock's mutex, so `close` cannot release it
/// mid-sweep): after a lost lock (its `LOCK` file removed and another process let in) the
/// files this store calls obsolete may be the other one's. A failed check makes the store
/// read-only with the reason; a closed store (lock released) deletes nothing.
pub(crate) fn delete_obsolete_files(inner: &DbInner) {
    let held = inner.lock.lock();
    let Some(lock) = held.as_ref() else {
        return;
    };
    if let Err(e) = lock.check() {
        inner.set_error(&e);
        return;
    }
    // List first, then read what is live: a file is registered as a pending output before it
    // is created and leaves that set only once a version lists it (both under the versions
    // lock), so every listed file that is still needed shows up in one of the two sets.
    let Ok(mut names) = inner.env.fs().list_dir(&inner.dir) else {
        return;
    };
    let (live, pending, placement, manifest_number) = {
        let mut v = inner.versions.lock();
        let pending = inner.pending_outputs.lock().clone();
        (v.live_files(), pending, v.placement(), v.manifest_number())
    };
    super::value_jobs::unpin(inner, &mut names);
    inner.pins.retain_unpinned(&mut names);
    inner.values.delete_obsolete(&names, &placement);
    let mut foreign = Vec::new();
    for name in names {
        let Some(kind) = parse_file_name(&name) else {
            continue;
        };
        let obsolete = match kind {
            // A complete table of another store (copied in under a name this store may
            // use) is not this store's to delete; only the store's own leftovers are.
            FileKind::Table(n) if live.contains(&n) || pending.contains(&n) => false,
            FileKind::Table(n) => match inner.tables.foreign(n) {
                Some(recorded) => {
                    foreign.push(super::ForeignTable::new(&inner.dir, &name, recorded));
                    false
                }
                None => true,
            },
            // Only older ones: a newer MANIFEST is left by a switch that failed after CURRENT
            // may already name it (the rename done, the directory sync failed); the next
            // open starts another MANIFEST and removes both.
            FileKind::Manifest(n) => n < manifest_number,
            // The durability log is the value placement's business (above). A temporary file
            // may belong to a CURRENT update in progress: only open removes it.
            _ => false,
        };
        if obsolete {
            if let FileKind::Table(n) = kind {
                inner.tables.evict(n);
            }
            let _ = inner.env.fs().remove_file(&inner.dir.join(&name));
        }
    }
    *inner.foreign_tables.lock() = foreign;
}

/// A test-only gate that holds compactions before they run until a second one is in flight,
/// or until it is clear that none will come: proof without timing that plans overlap.
#[cfg(test)]
pub(crate) mod gate {
    use super::super::{BgState, DbInner};

    /// The gate's state, in `BgState::gate` (present only when a test installs it).
    #[derive(Debug, Default)]
    pub(crate) struct Gate {
        /// Set by the test once its workload is in place.
        pub(crate) ready: bool,
        /// A worker found nothing to pick after `ready`.
        pub(crate) starved: bool,
        /// The gate let the held compactions go.
        pub(crate) released: bool,
        /// Compactions running when it did.
        pub(crate) peak: usize,
        /// Hold background plans between their commit and the deletion of their inputs.
        pub(crate) hold_sweep: bool,
        /// A plan is held there.
        pub(crate) sweep_held: bool,
    }

    /// A worker's pick found nothing.
    pub(super) fn starved(inner: &DbInner, bg: &mut BgState) {
        if let Some(g) = bg.gate.as_mut()
            && g.ready
            && !g.starved
        {
            g.starved = true;
            inner.bg_cv.notify_all();
        }
    }

    /// After a plan committed, before it deletes its inputs: while the gate says
    /// `hold_sweep`, a background plan says so (`sweep_held`) and waits.
    pub(super) fn before_sweep(inner: &DbInner, background: bool) {
        if !background {
            return;
        }
        let mut bg = inner.bg.lock();
        loop {
            let stop = inner
                .shutting_down
                .load(std::sync::atomic::Ordering::Acquire);
            match bg.gate.as_mut() {
                Some(g) if g.hold_sweep && !stop => {
                    if !g.sweep_held {
                        g.sweep_held = true;
                        inner.bg_cv.notify_all();
                    }
                }
                _ => return,
            }
            inner.bg_cv.wait(&mut bg);
        }
    }

    /// Hold a picked plan until two run, every worker runs one, or an idle worker found
    /// nothing more to pick after the test said its workload is complete (or something
    /// else would wait for the held plan: shutdown, a failure, a manual compaction).
    pub(super) fn wait(inner: &DbInner) {
        let workers = inner.options.max_background_compactions;
        let mut bg = inner.bg.lock();
        loop {
            let running = bg.running.len();
            // A waiting manual compaction would wait for the held plan forever.
            let stop = inner
                .shutting_down
                .load(std::sync::atomic::Ordering::Acquire)
                || bg.error.is_some()
                || bg.manual;
            let Some(g) = bg.gate.as_mut() else {
                return;
            };
            if g.released {
                return;
            }
            if running >= 2 || running >= workers || g.starved || stop {
                g.released = true;
                g.peak = running;
                inner.bg_cv.notify_all();
                return;
            }
            inner.bg_cv.wait(&mut bg);
        }
    }
}
