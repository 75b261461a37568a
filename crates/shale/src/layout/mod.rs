//! The layout axis: how tables are arranged on disk, found by reads, and compacted.
//!
//! A layout answers four questions about a [`Version`]: how is a frozen memory component
//! written out (`flush`: which files, where), where can a key be (`get`), which iterators
//! cover a scan, and what should be compacted next (`pick`, a pure function returning a
//! [`Plan`]). Flushing and executing a plan (`compact`) each produce a [`VersionEdit`] that
//! the engine commits; recovery flushes replayed writes through the same `flush`.
//! Implementations: [`leveled`], [`flsm`], [`trie`], [`lwc`].
//!
//! # Concurrent compactions
//!
//! The engine runs up to `Options::max_background_compactions` plans at once. It calls
//! `pick` under its state lock with a [`PickContext`] describing the plans in flight, marks
//! the returned plan's files and output range busy, runs the plan without the lock and
//! commits its edit to whatever version is current by then. That edit is still valid because
//! no other plan may touch a busy file, so every input the edit deletes is still present.
//! A layout's picker must therefore never return a plan that reads a busy file, nor one that
//! writes into a key range that a running plan writes at the same level (two outputs could
//! then overlap, or newer data could land below older data). Flushes are not in the
//! context: `flush` must write only where no plan writes or reads (both layouts here add
//! new files to level 0, whose files may overlap), since a flush commits beside running
//! plans.

use std::collections::HashSet;
use std::sync::Arc;

use crate::compaction::CompactionContext;
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::manifest::VersionEdit;
use crate::table::TableReader;
use crate::table::cache::{TableCache, TableSlot};
use crate::table::format::TableRead;
use crate::version::{FileMeta, LayoutState, NoLayoutState, Version};

pub mod concat;
pub mod cut;
pub mod flsm;
pub mod leveled;
pub mod lwc;
pub mod seeks;
pub mod trie;

/// What a picker decided: the inputs of one compaction and where its output goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// How to carry the plan out.
    pub kind: PlanKind,
    /// Input files by level; the first entry is the level being compacted.
    pub inputs: Vec<(usize, Vec<Arc<FileMeta>>)>,
    /// The level the output goes to.
    pub output_level: usize,
    /// Why the picker chose this (for logs and tests), e.g. "L0 has 4 files (trigger 4)".
    pub reason: String,
}

/// How a plan is carried out. The engine executes metadata-only kinds itself, the same way
/// for every layout ([`Plan::move_edit`]); kinds that write data go to [`Layout::compact`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlanKind {
    /// Move the input files to the output level by editing metadata only (no overlap
    /// below). Executed by the engine.
    Move,
    /// Merge the inputs and write new files. Executed by the layout.
    Merge,
    /// Merge the inputs of the first level and append them, as new segments, to the input
    /// files of the output level (an appendable table format,
    /// [`crate::table::TableFormat::appendable`]): those files keep their numbers and grow,
    /// their data is neither read nor rewritten. The edit removes each grown file and adds
    /// it back with its new committed size and key range (a file whose number an edit both
    /// removes and adds has grown). Executed by the layout.
    Append,
}

impl Plan {
    /// An edit removing every input file from its level (what a merge starts from).
    pub fn delete_inputs(&self) -> VersionEdit {
        let mut edit = VersionEdit::default();
        for (level, f) in self.input_files() {
            edit.deleted_files.push((level as u32, f.number));
        }
        edit
    }

    /// The edit of a [`PlanKind::Move`]: every input leaves its level and joins the output
    /// level unchanged.
    pub fn move_edit(&self) -> VersionEdit {
        let mut edit = self.delete_inputs();
        for (_, f) in self.input_files() {
            edit.new_files
                .push((self.output_level as u32, (**f).clone()));
        }
        edit
    }

    /// Every input file, with its level.
    pub fn input_files(&self) -> impl Iterator<Item = (usize, &Arc<FileMeta>)> {
        self.inputs
            .iter()
            .flat_map(|(l, files)| files.iter().map(move |f| (*l, f)))
    }

    /// The smallest and largest user key over every input (`None` without inputs): the
    /// range the output may cover.
    pub fn user_range(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        let lo = self
            .input_files()
            .map(|(_, f)| f.smallest_user_key())
            .min()?;
        let hi = self
            .input_files()
            .map(|(_, f)| f.largest_user_key())
            .max()?;
        Some((lo.to_vec(), hi.to_vec()))
    }

    /// What carrying out the plan with `edit` read and wrote, as (bytes read, bytes read
    /// from levels above the output level, bytes written): a file the edit removes and adds
    /// back under its number was not read and only its growth was written (a move, which
    /// neither reads nor writes, or an append), and an append reads none of the files it
    /// appends to.
    pub fn io_of(&self, edit: &VersionEdit) -> (u64, u64, u64) {
        let old = |n: u64| {
            self.input_files()
                .find(|(_, f)| f.number == n)
                .map(|(_, f)| f.size)
        };
        let kept = |level: usize, n: u64| {
            (self.kind == PlanKind::Append && level == self.output_level)
                || edit.new_files.iter().any(|(_, f)| f.number == n)
        };
        let written = edit
            .new_files
            .iter()
            .map(|(_, f)| f.size.saturating_sub(old(f.number).unwrap_or(0)))
            .sum();
        let read = self
            .input_files()
            .filter(|(l, f)| !kept(*l, f.number))
            .map(|(_, f)| f.size)
            .sum();
        let upper = self
            .input_files()
            .filter(|(l, f)| *l < self.output_level && !kept(*l, f.number))
            .map(|(_, f)| f.size)
            .sum();
        (read, upper, written)
    }

    /// Bytes of every input file.
    pub fn input_bytes(&self) -> u64 {
        self.input_files().map(|(_, f)| f.size).sum()
    }

    /// A compact description: `L0[1,2]+L1[7] -> L1 (merge)`.
    pub fn describe(&self) -> String {
        let ins: Vec<String> = self
            .inputs
            .iter()
            .filter(|(_, f)| !f.is_empty())
            .map(|(l, files)| {
                let nums: Vec<String> = files.iter().map(|f| f.number.to_string()).collect();
                format!("L{l}[{}]", nums.join(","))
            })
            .collect();
        let kind = match self.kind {
            PlanKind::Move => "move",
            PlanKind::Merge => "merge",
            PlanKind::Append => "append",
        };
        format!("{} -> L{} ({kind})", ins.join("+"), self.output_level)
    }
}

/// One running compaction's output: the level it writes and the user-key range it may
/// cover (the range of all its inputs, both ends inclusive).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BusyRange {
    /// The level the running plan writes to.
    pub output_level: usize,
    /// The smallest user key of its inputs.
    pub smallest: Vec<u8>,
    /// The largest user key of its inputs.
    pub largest: Vec<u8>,
}

/// The compactions in flight, as plain data: the input of [`Layout::pick`], so pickers stay
/// pure and can be tested from a text tree plus a list of busy files and ranges.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PickContext {
    /// Numbers of the files some running plan reads: no new plan may read them.
    pub busy_files: HashSet<u64>,
    /// The output range of every running plan.
    pub busy_ranges: Vec<BusyRange>,
}

impl PickContext {
    /// Nothing running (the single-threaded case and most tests).
    pub fn idle() -> PickContext {
        PickContext::default()
    }

    /// The context made by `plans` running at once.
    pub fn of_plans<'a>(plans: impl IntoIterator<Item = &'a Plan>) -> PickContext {
        let mut ctx = PickContext::default();
        for p in plans {
            ctx.busy_files
                .extend(p.input_files().map(|(_, f)| f.number));
            if let Some((smallest, largest)) = p.user_range() {
                ctx.busy_ranges.push(BusyRange {
                    output_level: p.output_level,
                    smallest,
                    largest,
                });
            }
        }
        ctx
    }

    /// Whether some running plan reads `file`.
    pub fn is_busy(&self, file: &FileMeta) -> bool {
        self.busy_files.contains(&file.number)
    }

    /// Whether a running plan writing to `level` may cover part of `[lo, hi]`.
    pub fn range_busy(&self, level: usize, lo: &[u8], hi: &[u8]) -> bool {
        self.busy_ranges.iter().any(|r| {
            r.output_level == level && r.smallest.as_slice() <= hi && lo <= r.largest.as_slice()
        })
    }

    /// Whether `plan` may run next to the running ones: it reads no busy file and its output
    /// range meets no running plan's output range at the same level.
    pub fn allows(&self, plan: &Plan) -> bool {
        if plan.input_files().any(|(_, f)| self.is_busy(f)) {
            return false;
        }
        match plan.user_range() {
            Some((lo, hi)) => !self.range_busy(plan.output_level, &lo, &hi),
            None => true,
        }
    }

    /// Whether nothing is running.
    pub fn is_idle(&self) -> bool {
        self.busy_files.is_empty() && self.busy_ranges.is_empty()
    }
}

/// What the engine gives a layout to read with.
pub struct ReadContext<'a> {
    /// Open tables.
    pub tables: &'a Arc<TableCache>,
    /// How the tables are read: why (counted per cause) and the reader's per-read choices
    /// (checksums, block cache).
    pub read: TableRead,
}

/// The most tables [`ReadContext::probe`] asks at once.
pub const PROBE_BATCH: usize = 16;

/// Tables of a batch that a read asked together (see [`ReadContext::probe`]): slot `i`
/// holds the `i`-th file's table (or the error opening it) if the file's key range holds
/// the key and its filter does not rule the key out, and whether that filter lets the key
/// through.
pub struct Probed {
    /// The open tables, by input position (`None`: the range does not hold the key, or a
    /// filter kept in the file's metadata ruled it out, so the table was not opened).
    pub tables: [Option<TableSlot>; PROBE_BATCH],
    /// The filter's answer for each slot: false where no table was opened, true for a
    /// table without a filter.
    pub pass: [bool; PROBE_BATCH],
    /// Whether the file's key range holds the key, so the read needed its filter's answer.
    pub asked: [bool; PROBE_BATCH],
}

impl Probed {
    /// Slot `i` as a read reaching it sees it: `None` when the file cannot hold the key,
    /// else its table and filter answer.
    ///
    /// # Errors
    /// The error opening the table: reported only to a read that gets this far, so a
    /// damaged table behind the answer does not fail the read.
    pub fn slot(&mut self, i: usize) -> Result<Option<(Arc<dyn TableReader>, bool)>> {
        match self.tables.get_mut(i).and_then(Option::take) {
            None => Ok(None),
            Some(Err(e)) => Err(*e),
            Some(Ok(t)) => Ok(Some((t, self.pass.get(i).copied().unwrap_or(false)))),
        }
    }

    /// Whether the `i`-th file's key range holds the key, so the read asked its filter
    /// (whether or not the table had to be opened for it).
    pub fn asked(&self, i: usize) -> bool {
        self.asked.get(i).copied().unwrap_or(false)
    }
}

impl ReadContext<'_> {
    /// Ask the filters of the tables among `files` (at most [`PROBE_BATCH`]) whose user-key
    /// range holds `user_key`, with the key's `hash` ([`crate::table::bloom::hash64`]),
    /// before any block is read, and open the tables a read may have to search. A filter
    /// answers from one cache line, usually a memory miss; asked in turn, each table would
    /// wait for its own miss before the next is looked at, while here no answer decides
    /// which line another table reads, so the misses overlap.
    ///
    /// A filter kept in the file's metadata ([`crate::version::FileMeta::filter`]) answers
    /// without the table cache, and a table it rules out is not opened (so a file damaged
    /// or lost after its first open no longer fails reads of keys it cannot hold); the other
    /// tables are looked up under one table-cache lock (a miss then opens its table), their
    /// filters asked, and kept for next time.
    /// A table that fails to open keeps its error in its slot ([`Probed::slot`]).
    pub fn probe<'f>(
        &self,
        files: impl IntoIterator<Item = &'f FileMeta>,
        user_key: &[u8],
        hash: u64,
    ) -> Probed {
        let mut p = Probed {
            tables: Default::default(),
            pass: [false; PROBE_BATCH],
            asked: [false; PROBE_BATCH],
        };
        let mut metas: [Option<&FileMeta>; PROBE_BATCH] = [None; PROBE_BATCH];
        let mut files = files.into_iter();
        for ((m, a), f) in metas.iter_mut().zip(&mut p.asked).zip(&mut files) {
            if f.smallest_user_key() <= user_key && user_key <= f.largest_user_key() {
                *m = Some(f);
                *a = true;
            }
        }
        debug_assert!(
            files.next().is_none(),
            "probe takes at most PROBE_BATCH files"
        );
        for f in metas.iter().flatten() {
            if let Some(Some(filter)) = f.filter.get() {
                filter.touch(hash);
            }
        }
        // Which tables to open: those whose filter is not known yet (`fresh`), and those a
        // known filter lets through (or that have none).
        let mut ids = [None; PROBE_BATCH];
        let mut fresh = [false; PROBE_BATCH];
        for (i, m) in metas.iter().enumerate() {
            let Some(f) = m else { continue };
            let open = match f.filter.get() {
                None => {
                    fresh[i] = true;
                    true
                }
                Some(None) => true,
                Some(Some(filter)) => filter.may_contain_hash(hash),
            };
            if open {
                ids[i] = Some(f.table_id());
                p.pass[i] = true;
            }
        }
        self.tables.tables(&ids, &mut p.tables);
        for (i, m) in metas.iter().enumerate() {
            if let (true, Some(f), Some(Some(Ok(t)))) = (fresh[i], m, p.tables.get(i)) {
                f.filter.pin(t.filter().cloned());
                t.touch_filter(hash);
            }
        }
        for (i, t) in p.tables.iter().enumerate() {
            if fresh[i] {
                p.pass[i] = matches!(t, Some(Ok(t)) if t.may_contain_hash(hash));
            }
        }
        p
    }

    /// The newest entry for `user_key` at or below `seek_key`'s snapshot in level 0, whose
    /// files may overlap and are ordered newest first (the same in every layout that flushes
    /// to an unguarded level 0). `hash` is the key's filter hash.
    pub fn get_level0(
        &self,
        version: &Version,
        user_key: &[u8],
        hash: u64,
        seek_key: &[u8],
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        for files in version.level(0).chunks(PROBE_BATCH) {
            let mut p = self.probe(files.iter().map(|f| &**f), user_key, hash);
            for i in 0..files.len() {
                if let Some((t, true)) = p.slot(i)?
                    && let Some(hit) = t.lookup(user_key, seek_key, self.read)?
                {
                    return Ok(Some(hit));
                }
            }
        }
        Ok(None)
    }
}

/// The byte budget of level `level` (>= 1) of a tree whose level 1 holds `base` bytes and
/// each deeper level `multiplier` times the one above (saturating): the leveled, FLSM and
/// LWC pickers' `max_bytes`.
pub fn level_budget(base: u64, multiplier: u64, level: usize) -> u64 {
    let mut b = base;
    for _ in 1..level {
        b = b.saturating_mul(multiplier);
    }
    b
}

/// A manual compaction's inputs at `level` for `[begin, end]`, in a layout whose levels
/// below 0 hold disjoint files: level 0 gives all its files when any of them overlaps the
/// range (as automatic compaction takes them), a deeper level the files overlapping it.
/// `None` when the level is the last or holds nothing in the range.
pub fn manual_inputs(
    v: &Version,
    level: usize,
    begin: Option<&[u8]>,
    end: Option<&[u8]>,
) -> Option<Vec<Arc<FileMeta>>> {
    if level + 1 >= v.num_levels() {
        return None;
    }
    let inputs = if level == 0 {
        if v.overlapping(0, begin, end).is_empty() {
            return None;
        }
        v.level(0).to_vec()
    } else {
        v.overlapping(level, begin, end)
    };
    (!inputs.is_empty()).then_some(inputs)
}

/// The flush of a layout whose level 0 holds overlapping tables: `input` becomes one new
/// table in level 0 (a memory component is bounded in size, so one file holds it); nothing
/// is written for an empty input.
///
/// # Errors
/// As [`Layout::flush`].
pub fn flush_to_level0(
    input: &mut dyn InternalIterator,
    ctx: &CompactionContext<'_>,
) -> Result<VersionEdit> {
    let spec = crate::compaction::MergeSpec {
        target_file_size: u64::MAX,
        // Tombstones stay: older versions of their keys may sit in the tables below.
        is_base_for_key: &|_| false,
        level: 0,
        partition: None,
        pile: None,
    };
    let (files, _) = crate::compaction::merge_into_tables(input, &spec, ctx)?;
    let mut edit = VersionEdit::default();
    edit.new_files.extend(files.into_iter().map(|f| (0, f)));
    Ok(edit)
}

/// A table layout. Implementations must be pure in `pick`: no I/O, no clock, no randomness,
/// so pickers can be tested and simulated from a text description of a tree.
pub trait Layout: Send + Sync + std::fmt::Debug {
    /// The name recorded in the MANIFEST; a store is reopened only with the same layout.
    fn name(&self) -> &'static str;

    /// Whether [`Layout::iterators`] can cover a scan. A layout that places keys by hash
    /// (LSM-trie) answers point reads only; the engine then refuses scans and cursors with
    /// [`crate::Error::Unsupported`] and tests skip their scan checks. Default: true.
    fn supports_scans(&self) -> bool {
        true
    }

    /// The layout's state in an empty store (see [`LayoutState`]): what the version set
    /// replays the layout's MANIFEST records into. Default: a layout without state.
    fn empty_state(&self) -> Arc<dyn LayoutState> {
        Arc::new(NoLayoutState)
    }

    /// A property of `version` that only this layout knows (`shale.num-guards-at-level<N>`
    /// for FLSM), or `None`. Default: none.
    fn property(&self, _version: &Version, _name: &str) -> Option<String> {
        None
    }

    /// Write out a frozen memory component: `input` yields its entries in internal-key
    /// order, tombstones included (older versions of their keys may be on disk).
    /// `ctx.version` is the tree the files join. Returns the edit that adds what was
    /// written (not committed; the engine adds its own records and commits it). Flushes
    /// commit beside running compactions: see the module docs for where a flush may write.
    ///
    /// # Errors
    /// I/O errors; [`crate::Error::Closed`] when the store closes meanwhile.
    fn flush(
        &self,
        input: &mut dyn InternalIterator,
        ctx: &CompactionContext<'_>,
    ) -> Result<VersionEdit>;

    /// The newest entry for `user_key` at or below the snapshot encoded in `seek_key`
    /// (see [`crate::key::seek_key`]): its encoded internal key and stored value.
    fn get(
        &self,
        version: &Version,
        ctx: &ReadContext<'_>,
        user_key: &[u8],
        seek_key: &[u8],
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>>;

    /// Iterators that together cover every entry of the version (merged by the engine).
    fn iterators(
        &self,
        version: &Arc<Version>,
        ctx: &ReadContext<'_>,
    ) -> Result<Vec<Box<dyn InternalIterator>>>;

    /// The next compaction to run, if any, given the compactions already `running` (see
    /// the module documentation for the rules a plan must obey). Pure.
    fn pick(&self, version: &Version, running: &PickContext) -> Option<Plan>;

    /// The steps of a manual compaction of `[begin, end]` over `version`, in order: the
    /// engine picks each step's plan with [`Layout::pick_range`] against the version the
    /// previous step left. Default (layouts of levels): every level from 0 to the one above
    /// the deepest level holding part of the range (at least level 0 when anything
    /// overlaps), as LevelDB's `CompactRange`; none when nothing overlaps.
    fn range_steps(
        &self,
        version: &Version,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Vec<usize> {
        let levels = version.num_levels();
        let deepest = (0..levels)
            .rev()
            .find(|&l| !version.overlapping(l, begin, end).is_empty());
        match deepest {
            Some(d) => (0..d.max(1).min(levels - 1)).collect(),
            None => Vec::new(),
        }
    }

    /// The plan of one step of a manual compaction ([`Layout::range_steps`]; for layouts
    /// of levels the step is the level whose files overlapping `[begin, end]` are pushed
    /// into the next), or `None` when the step has nothing to do. The engine runs manual
    /// plans alone (no background plan in flight), so no context is needed.
    fn pick_range(
        &self,
        version: &Version,
        step: usize,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Option<Plan>;

    /// The last step of a manual compaction when the store has a compaction filter, or
    /// flushed range tombstones overlapping the range: a plan that merges the files of the
    /// deepest level holding keys of `[begin, end]` into that same level, so the filter and
    /// the tombstones see what no step pushed down (RocksDB's
    /// `BottommostLevelCompaction::kIfHaveCompactionFilter`). `None` when there is nothing
    /// to rewrite. Default: none.
    fn pick_bottom(
        &self,
        _version: &Version,
        _begin: Option<&[u8]>,
        _end: Option<&[u8]>,
    ) -> Option<Plan> {
        None
    }

    /// About how many bytes of table files hold the user keys in `[start, limit)` in
    /// `version` (RocksDB's `GetApproximateSizes` over files; value-log bytes are not
    /// counted). Default (files with byte-order key ranges): for each file whose range
    /// meets `[start, limit)`, the distance between where `start` and `limit` fall in it
    /// ([`crate::table::TableReader::approximate_offset_of`]).
    ///
    /// # Errors
    /// A table that cannot be opened, or a damaged index.
    fn approximate_size(
        &self,
        version: &Version,
        ctx: &ReadContext<'_>,
        start: &[u8],
        limit: &[u8],
    ) -> Result<u64> {
        if start >= limit {
            return Ok(0);
        }
        let lo = crate::key::seek_key(start, crate::key::MAX_SEQNO);
        let hi = crate::key::seek_key(limit, crate::key::MAX_SEQNO);
        let mut total = 0;
        for (_, f) in version.files() {
            if f.largest_user_key() < start || f.smallest_user_key() >= limit {
                continue;
            }
            let t = ctx.tables.table(f.table_id())?;
            let from = if f.smallest_user_key() >= start {
                0
            } else {
                t.approximate_offset_of(&lo)?
            };
            let to = if f.largest_user_key() < limit {
                f.size
            } else {
                t.approximate_offset_of(&hi)?
            };
            total += to.saturating_sub(from);
        }
        Ok(total)
    }

    /// Flushed files that wait for their first compaction (for layouts of levels: the files
    /// of level 0). The engine delays writes while it is at
    /// [`crate::options::Options::level0_slowdown_trigger`] and stops them at
    /// [`crate::options::Options::level0_stop_trigger`]. Default: level 0's file count.
    fn flush_backlog(&self, version: &Version) -> usize {
        version.level(0).len()
    }

    /// Carry out a plan that writes data ([`PlanKind::Merge`], [`PlanKind::Append`]; the
    /// engine executes moves itself): write new files (or new segments of the plan's
    /// output-level inputs) and describe the change as an edit (not committed).
    fn compact(&self, plan: &Plan, ctx: &CompactionContext<'_>) -> Result<VersionEdit>;

    /// A user iterator sought `user_key` in `version` (a cursor's seek, or an iterator's
    /// first step from one of its bounds). Layouts that compact by read patterns (FLSM's
    /// and the leveled layout's seek-based compaction) keep counters here; returns true
    /// when a compaction became wanted, so the engine wakes its compaction thread. Default:
    /// nothing.
    fn note_seek(&self, _version: &Version, _user_key: &[u8]) -> bool {
        false
    }

    /// A user iterator read about 1 MiB of entries since its last sample (at random gaps
    /// averaging that, LevelDB's read sampling in `DBIter`) and stands on `user_key` in
    /// `version`. Layouts that compact by read patterns keep counters here (the leveled
    /// layout's seek-based compaction, as LevelDB's `RecordReadSample`); returns true when a
    /// compaction became wanted. Default: nothing.
    fn note_read_sample(&self, _version: &Version, _user_key: &[u8]) -> bool {
        false
    }

    /// True once after `get` made the layout want a compaction (FLSM charges guards whose
    /// many tables gets had to probe, the leveled layout the first of several tables a get
    /// probed); the engine then wakes its compaction thread.
    /// Default: never.
    fn take_compaction_wanted(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::env::Env;
    use crate::key::{ValueKind, make_internal_key};
    use crate::table::bloom::hash64;
    use crate::table::table_file_name;
    use crate::table::test_fs::TestFs;

    /// Table `number` holding `k{number}-0000` .. `k{number}-0099`, and metadata whose
    /// range covers every key of the test.
    fn table(env: &Env, number: u64) -> FileMeta {
        let id = crate::table::cache::tests::write_table(env, number);
        FileMeta {
            number,
            size: id.size,
            smallest: make_internal_key(b"a", 1, ValueKind::Value),
            largest: make_internal_key(b"z", 1, ValueKind::Value),
            smallest_seq: 1,
            largest_seq: 100,
            entries: 100,
            tombstones: 0,
            filter: Default::default(),
        }
    }

    /// A table cache of `sst` tables under `/db`.
    fn cache(env: Env) -> Arc<TableCache> {
        let format = Arc::new(crate::table::SstFormat);
        Arc::new(TableCache::new(
            env,
            "/db".into(),
            10,
            format,
            None,
            true,
            None,
        ))
    }

    #[test]
    fn a_probe_keeps_filters_and_then_opens_only_the_tables_they_let_through() {
        let (_fs, env) = TestFs::env();
        let files: Vec<FileMeta> = (1..=3).map(|n| table(&env, n)).collect();
        let tables = cache(env);
        let ctx = ReadContext {
            tables: &tables,
            read: crate::env::ReadCause::Get.into(),
        };
        let key = b"k2-0005";
        let hash = hash64(key);

        // First read: no filter known, every table in range is opened and its filter kept.
        let mut p = ctx.probe(&files, key, hash);
        assert_eq!(tables.len(), 3);
        assert!(
            files
                .iter()
                .all(|f| f.filter.get().is_some_and(|f| f.is_some()))
        );
        assert!((0..3).all(|i| p.asked(i)));
        assert!(!p.asked(3));
        assert!(matches!(p.slot(0), Ok(Some((_, false)))));
        assert!(matches!(p.slot(1), Ok(Some((_, true)))));
        assert!(matches!(p.slot(2), Ok(Some((_, false)))));

        // With the tables closed, a read opens only the one whose kept filter passes.
        for n in 1..=3 {
            tables.evict(n);
        }
        let mut p = ctx.probe(&files, key, hash);
        assert_eq!(tables.len(), 1);
        assert!((0..3).all(|i| p.asked(i)));
        assert!(matches!(p.slot(0), Ok(None)));
        let (t, pass) = p.slot(1).unwrap().unwrap();
        assert!(pass);
        assert_eq!(t.path(), Path::new("/db").join(table_file_name(2)));
        assert!(matches!(p.slot(2), Ok(None)));

        // A key no filter lets through opens nothing; one outside a range is not asked.
        tables.evict(2);
        let absent = b"k7-0001";
        let mut narrow = files[0].clone();
        narrow.largest = make_internal_key(b"b", 1, ValueKind::Value);
        let p = ctx.probe([&narrow, &files[1], &files[2]], absent, hash64(absent));
        assert_eq!(tables.len(), 0);
        assert!(!p.asked(0) && p.asked(1) && p.asked(2));
    }

    #[test]
    fn a_table_that_fails_to_open_keeps_its_error_and_no_filter() {
        let (_fs, env) = TestFs::env();
        let mut missing = table(&env, 1);
        missing.number = 9;
        let tables = cache(env);
        let ctx = ReadContext {
            tables: &tables,
            read: crate::env::ReadCause::Get.into(),
        };
        let key = b"k1-0005";
        let mut p = ctx.probe([&missing], key, hash64(key));
        assert!(p.asked(0));
        assert!(p.slot(0).is_err());
        assert!(missing.filter.get().is_none());
    }
}
