//! The fragmented LSM layout (PebblesDB, SOSP'17): guards partition every level below 0, the
//! tables inside one guard may overlap, and compaction appends to the next level instead of
//! rewriting it.
//!
//! ```text
//! L0   [t9 t8 t7]                       unguarded, newest first
//! L1   | sentinel  | g=k4          |    one guard key: two ranges
//!      | t5        | t6 t3         |    tables of one range may overlap
//! L2   | sentinel  | k2  | k4 | k7 |    guards of L1 are guards of L2 (hash rule)
//! ```
//!
//! Which keys are guards is decided by a fixed hash ([`guards`]). A compaction writing into a
//! level cuts its output at that level's guards, committed ones and keys of the data that the
//! hash makes guards there; the latter are committed in the same edit (at that level and every
//! deeper one), so a guard exists on disk exactly when some compaction has partitioned by it.
//!
//! Reads: a get binary-searches the guards of each level and asks every table of that guard
//! whose range holds the key (each table checks its bloom filter first), keeping the newest
//! entry; a scan walks each level guard by guard, merging the tables of the current guard.
//! See `docs/designs/pebblesdb.md`.

pub mod guards;
pub mod iter;
pub mod picker;
pub mod state;
#[cfg(test)]
mod tests;

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};

use parking_lot::Mutex;

use super::PickContext;
use super::{Layout, PROBE_BATCH, Plan, ReadContext};
use crate::compaction::{CompactionContext, MergeSpec};
use crate::env::ReadCause;
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::iter::merging::MergingIterator;
use crate::key::compare_internal;
use crate::layout::cut::{Cut, CutRule, merge_cut};
use crate::manifest::VersionEdit;
use crate::options::Options;
use crate::table::bloom;
use crate::version::{FileMeta, LayoutState, Version};
use guards::GuardRule;
use picker::{Busy, HotGuard, PickerConfig};
use state::{DELETED_GUARD, GuardState, Guarded, NEW_GUARD, guard_record, unit_index};

/// See the module documentation.
#[derive(Debug)]
pub struct Flsm {
    cfg: PickerConfig,
    rule: GuardRule,
    target_file_size: u64,
    seek_trigger: u32,
    get_compaction: bool,
    /// See [`crate::options::FlsmOptions::parallel_seek_min_tables`].
    parallel_seek_min_tables: usize,
    seeks: Mutex<SeekState>,
    /// Set when a get marked a guard hot; taken by the engine to wake compaction.
    wanted: AtomicBool,
}

/// Seeks per guard (the paper's seek-based compaction).
#[derive(Debug, Default)]
struct SeekState {
    /// Per (level, guard hash of the guard's key): reads counted while the guard held the
    /// recorded number of tables (a change of that number restarts the count), and the
    /// count at which the hot list is next looked at.
    counts: HashMap<(usize, u64), (u64, usize, u64)>,
    /// Guards wanted for compaction, as (level, the guard's key; empty for the sentinel).
    hot: Vec<(usize, Vec<u8>)>,
}

/// Bytes of guard data that one extra table read by a seek is worth compacting (LevelDB's
/// `allowed_seeks` rule): a guard of `n` tables absorbs `bytes / SEEK_BYTES / (n - 1)` seeks
/// (at least `seek_compaction_trigger`) before it is merged.
const SEEK_BYTES: u64 = 16 * 1024;

impl Flsm {
    /// An FLSM layout configured from `options`.
    pub fn new(options: &Options) -> Flsm {
        Flsm {
            cfg: PickerConfig {
                level0_trigger: options.level0_compaction_trigger,
                base_bytes: options.max_bytes_for_level_base,
                multiplier: options.level_size_multiplier,
                max_files_per_guard: options.flsm.max_sstables_per_guard,
                rewrite_ratio: options.flsm.rewrite_ratio,
                aggressive_ratio_percent: options.flsm.aggressive_ratio_percent,
                policy: options.flsm.policy,
            },
            rule: GuardRule {
                top_level_bits: options.flsm.top_level_bits,
                bit_decrement: options.flsm.bit_decrement,
            },
            target_file_size: options.target_file_size,
            seek_trigger: options.flsm.seek_compaction_trigger,
            get_compaction: options.flsm.get_compaction,
            parallel_seek_min_tables: options.flsm.parallel_seek_min_tables,
            seeks: Mutex::new(SeekState::default()),
            wanted: AtomicBool::new(false),
        }
    }

    /// The next compaction given what other compactions hold (see [`picker::pick`]).
    pub fn pick_with(&self, version: &Version, busy: &Busy) -> Option<Plan> {
        let hot: Vec<HotGuard> = {
            let mut s = self.seeks.lock();
            // A hot guard that holds one table now (pushed down whole, merged for another
            // reason, or made hot by a cursor on an old version) gains nothing; kept, it
            // would be rewritten as soon as a compaction appends a second table, with no
            // seek paying for it. Seeks make it hot again if they keep coming.
            s.hot.retain(|(l, k)| {
                version
                    .unit_files(*l, unit_index(version.guards(*l), k))
                    .len()
                    > 1
            });
            s.hot
                .iter()
                .map(|(l, k)| (*l, unit_index(version.guards(*l), k)))
                .collect()
        };
        let plan = picker::pick(version, &self.cfg, busy, &hot);
        if let Some(p) = &plan
            && let Some((level, files)) = p.inputs.first()
            && let Some((lo, hi)) = picker::key_range(files)
        {
            // A guard whose tables all go (merged in place or pushed down) is no longer hot;
            // one that keeps some (a tiered overflow merges only the newest) stays hot, so
            // reads that paid for it still get it merged whole.
            let g = version.guards(*level);
            let (a, b) = (unit_index(g, lo), unit_index(g, hi));
            let inputs: HashSet<u64> = files.iter().map(|f| f.number).collect();
            self.seeks.lock().hot.retain(|(l, k)| {
                let u = unit_index(g, k);
                *l != *level
                    || u < a
                    || u > b
                    || !version
                        .unit_files(*l, u)
                        .iter()
                        .all(|f| inputs.contains(&f.number))
            });
        }
        plan
    }
}

impl Flsm {
    /// Charge guard `u` of `level` for one read that touched `extra` more tables than one.
    /// Returns true when the guard just became hot. Counting is best effort: a read that
    /// finds the counters busy skips it rather than wait.
    fn charge(&self, version: &Version, level: usize, u: usize, extra: usize) -> bool {
        if self.seek_trigger == 0 {
            return false;
        }
        let files = version.unit_files(level, u);
        let Some(mut s) = self.seeks.try_lock() else {
            return false;
        };
        let budget = u64::from(self.seek_trigger)
            .max(files.iter().map(|f| f.size).sum::<u64>() / SEEK_BYTES / extra.max(1) as u64);
        let lo = version.unit_bounds(level, u).0.unwrap_or_default();
        let c = s
            .counts
            .entry((level, guards::guard_hash(lo)))
            .or_insert((0, files.len(), 0));
        if c.1 != files.len() {
            *c = (0, files.len(), 0);
        }
        c.0 += 1;
        // Past the budget the guard stays listed as hot until a compaction changes its
        // tables; the list is looked at again only after another budget's worth of reads
        // (an in-place merge of a level can take seconds, and every read of its guards
        // meanwhile would otherwise copy the guard key and scan the list), so a guard
        // dropped from the list while its tables stay the same becomes hot again later.
        if c.0 < budget.max(c.2) {
            return false;
        }
        c.2 = c.0 + budget;
        let key = (level, lo.to_vec());
        if s.hot.contains(&key) {
            return false;
        }
        s.hot.push(key);
        true
    }
}

/// True when `f`'s user-key range holds `key`.
fn holds(f: &FileMeta, key: &[u8]) -> bool {
    f.smallest_user_key() <= key && key <= f.largest_user_key()
}

impl Layout for Flsm {
    fn name(&self) -> &'static str {
        "flsm"
    }

    fn empty_state(&self) -> Arc<dyn LayoutState> {
        Arc::new(GuardState::default())
    }

    /// `shale.num-guards-at-level<N>`: how many guards level N has; `shale.guards-at-level<N>`:
    /// its guard keys in order, one per line, each in lowercase hex.
    fn property(&self, version: &Version, name: &str) -> Option<String> {
        if let Some(l) = name.strip_prefix("shale.num-guards-at-level") {
            let l: usize = l.parse().ok()?;
            return (l < version.num_levels()).then(|| version.guards(l).len().to_string());
        }
        let l: usize = name.strip_prefix("shale.guards-at-level")?.parse().ok()?;
        (l < version.num_levels()).then(|| {
            let mut out = String::new();
            for g in version.guards(l) {
                for b in g {
                    out.push_str(&format!("{b:02x}"));
                }
                out.push('\n');
            }
            out
        })
    }

    fn flush(
        &self,
        input: &mut dyn InternalIterator,
        ctx: &CompactionContext<'_>,
    ) -> Result<VersionEdit> {
        crate::layout::flush_to_level0(input, ctx)
    }

    fn get(
        &self,
        version: &Version,
        ctx: &ReadContext<'_>,
        user_key: &[u8],
        seek_key: &[u8],
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let hash = bloom::hash64(user_key);
        if let Some(hit) = ctx.get_level0(version, user_key, hash, seek_key)? {
            return Ok(Some(hit));
        }
        for level in 1..version.num_levels() {
            // An empty level holds nothing to probe: its guards are not searched.
            if version.level(level).is_empty() {
                continue;
            }
            let guards = version.guards(level);
            let u = unit_index(guards, user_key);
            let guarded = !guards.is_empty();
            let mut best: Option<(Vec<u8>, Vec<u8>)> = None;
            let mut probed = 0usize;
            // The guard's tables, newest first, a batch at a time with their filters asked
            // together (`ReadContext::probe`): a guard holding many fragments costs one
            // overlapped round of filter misses per batch, not one miss per table, and
            // (filters kept in the metadata) a table-cache lookup only for the tables a
            // filter lets through.
            'guard: for files in version.unit_files(level, u).chunks(PROBE_BATCH) {
                let mut p = ctx.probe(files.iter().map(|f| &**f), user_key, hash);
                for (i, f) in files.iter().enumerate() {
                    // One whose entries are all older than the entry found holds nothing
                    // newer, and neither does any after it (when the level has guards; a
                    // level without them keeps key order, and is searched whole).
                    if guarded
                        && best
                            .as_ref()
                            .is_some_and(|b| f.largest_seq < crate::key::trailer(&b.0) >> 8)
                    {
                        break 'guard;
                    }
                    // Charged per table whose range holds the key, opened or not: a filter
                    // kept in the metadata spares the open, not the probe.
                    if p.asked(i) {
                        probed += 1;
                    }
                    let Some((t, pass)) = p.slot(i)? else {
                        continue;
                    };
                    if !pass {
                        continue;
                    }
                    if let Some(hit) = t.lookup(user_key, seek_key, ctx.read)? {
                        // Tables of one guard may overlap: the newest entry (smallest
                        // internal key for one user key) wins.
                        if best
                            .as_ref()
                            .is_none_or(|b| compare_internal(&hit.0, &b.0) == Ordering::Less)
                        {
                            best = Some(hit);
                        }
                    }
                }
            }
            if probed > 1 && self.get_compaction && self.charge(version, level, u, probed - 1) {
                self.wanted.store(true, AtomicOrdering::Release);
            }
            if best.is_some() {
                return Ok(best);
            }
        }
        Ok(None)
    }

    fn take_compaction_wanted(&self) -> bool {
        self.wanted.load(AtomicOrdering::Relaxed) && self.wanted.swap(false, AtomicOrdering::AcqRel)
    }

    fn iterators(
        &self,
        version: &Arc<Version>,
        ctx: &ReadContext<'_>,
    ) -> Result<Vec<Box<dyn InternalIterator>>> {
        let mut out: Vec<Box<dyn InternalIterator>> = Vec::new();
        for f in version.level(0) {
            out.push(ctx.tables.table(f.table_id())?.iter(ctx.read));
        }
        // Parallel seeks only at the last level holding data: the one that does not fit in
        // memory first, so the one whose seeks read the device.
        let deepest = (1..version.num_levels()).rfind(|&l| !version.level(l).is_empty());
        for level in 1..version.num_levels() {
            if !version.level(level).is_empty() {
                let parallel_min = if Some(level) == deepest {
                    self.parallel_seek_min_tables
                } else {
                    0
                };
                out.push(Box::new(iter::GuardLevelIterator::new(
                    Arc::clone(version),
                    level,
                    Arc::clone(ctx.tables),
                    ctx.read,
                    parallel_min,
                )));
            }
        }
        Ok(out)
    }

    fn pick(&self, version: &Version, running: &PickContext) -> Option<Plan> {
        let busy = Busy {
            files: running.busy_files.clone(),
            writing: running
                .busy_ranges
                .iter()
                .map(|r| (r.output_level, r.smallest.clone(), r.largest.clone()))
                .collect(),
        };
        self.pick_with(version, &busy)
    }

    fn pick_range(
        &self,
        version: &Version,
        level: usize,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Option<Plan> {
        picker::pick_range(version, level, begin, end)
    }

    fn note_seek(&self, version: &Version, user_key: &[u8]) -> bool {
        let mut wanted = false;
        // Every level where the seek has to merge several tables of one guard is charged
        // (an empty level has none to merge: its guards are not searched).
        for l in 1..version.num_levels() {
            if version.level(l).is_empty() {
                continue;
            }
            let u = unit_index(version.guards(l), user_key);
            let n = version.unit_files(l, u).len();
            if n > 1 {
                wanted |= self.charge(version, l, u, n - 1);
            }
        }
        wanted
    }

    fn pick_bottom(
        &self,
        version: &Version,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Option<Plan> {
        picker::pick_bottom(version, begin, end)
    }

    fn compact(&self, plan: &Plan, ctx: &CompactionContext<'_>) -> Result<VersionEdit> {
        // Files leave their levels here; what replaces them is written below.
        let mut edit = plan.delete_inputs();
        let out_level = plan.output_level;
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
        for (_, f) in plan.input_files() {
            children.push(
                ctx.tables
                    .table(f.table_id())?
                    .iter(ReadCause::Compaction.into()),
            );
        }
        let merged = MergingIterator::new(children);
        let inputs: HashSet<u64> = plan.input_files().map(|(_, f)| f.number).collect();
        let v = ctx.version;
        let is_base = |key: &[u8]| {
            (out_level..v.num_levels()).all(|l| {
                let u = unit_index(v.guards(l), key);
                !v.unit_files(l, u)
                    .iter()
                    .any(|f| !inputs.contains(&f.number) && holds(f, key))
            })
        };
        let in_place = plan.inputs.iter().all(|(l, _)| *l == out_level);
        // A guard merged in place ends as one table per guard range: were it cut by size, a
        // guard larger than the target would still hold several tables, and the rule that
        // picked it (too many tables, or reads paying for them) would pick it again.
        let target_file_size = if in_place {
            u64::MAX
        } else {
            self.target_file_size
        };
        let spec = MergeSpec {
            target_file_size,
            is_base_for_key: &is_base,
            level: out_level,
            partition: None,
            pile: None,
        };
        let rule = GuardCut {
            committed: v.guards(out_level).to_vec(),
            rule: self.rule,
            level: out_level,
            limit: None,
            discovered: Vec::new(),
        };
        let mut cut = Cut::new(merged, rule);
        for f in merge_cut(&mut cut, &spec, ctx)? {
            edit.new_files.push((out_level as u32, f));
        }
        // New guards hold at the output level and every deeper one (the hash rule nests).
        for key in &cut.rule().discovered {
            for l in out_level..v.num_levels() {
                if v.guards(l).binary_search(key).is_err() {
                    edit.records.push(guard_record(NEW_GUARD, l as u32, key));
                }
            }
        }
        for (l, key) in empty_guards(v, plan, &edit) {
            edit.records.push(guard_record(DELETED_GUARD, l, &key));
        }
        Ok(edit)
    }
}

/// Guards that `edit` leaves with no data at any level: the guard keys inside the plan's
/// input range at its input level whose range is empty at every level that has them (then
/// no level's guard list loses a key that a shallower level keeps, so guards still nest).
/// The paper designed this and left it out; without it, deleted key ranges leave empty
/// guards behind forever. A deleted guard returns when a compaction meets its key again.
fn empty_guards(v: &Version, plan: &Plan, edit: &VersionEdit) -> Vec<(u32, Vec<u8>)> {
    let Some((level, files)) = plan.inputs.first() else {
        return Vec::new();
    };
    let Some((lo, hi)) = picker::key_range(files) else {
        return Vec::new();
    };
    let candidates: Vec<Vec<u8>> = v
        .guards(*level)
        .iter()
        .filter(|g| lo <= g.as_slice() && g.as_slice() <= hi)
        .cloned()
        .collect();
    if candidates.is_empty() {
        return Vec::new();
    }
    let Ok(after) = v.apply(edit) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for g in candidates {
        let levels: Vec<usize> = (1..after.num_levels())
            .filter(|&l| after.guards(l).binary_search(&g).is_ok())
            .collect();
        let empty = levels.iter().all(|&l| {
            let u = unit_index(after.guards(l), &g);
            after.unit_files(l, u).is_empty()
        });
        if empty && !levels.is_empty() {
            out.extend(levels.into_iter().map(|l| (l as u32, g.clone())));
        }
    }
    out
}

/// The cut of one compaction's merged input at the output level's guards ([`CutRule`]): a
/// new output starts at the first key of each guard range, so each call of the merge writes
/// the tables of one range. Keys that the hash makes guards of the output level but are not
/// committed yet are recorded as discovered and cut at too.
struct GuardCut {
    committed: Vec<Vec<u8>>,
    rule: GuardRule,
    level: usize,
    /// The first committed guard above the current range's start.
    limit: Option<Vec<u8>>,
    discovered: Vec<Vec<u8>>,
}

impl CutRule for GuardCut {
    /// Start a range at `k`.
    fn start(&mut self, k: &[u8]) {
        let i = self.committed.partition_point(|g| g.as_slice() <= k);
        self.limit = self.committed.get(i).cloned();
        let is_committed = i > 0 && self.committed.get(i - 1).is_some_and(|g| g == k);
        if !is_committed
            && self.rule.is_guard(k, self.level)
            && self.discovered.last().map(Vec::as_slice) != Some(k)
        {
            self.discovered.push(k.to_vec());
        }
    }

    /// A new user key that starts another guard range: past the next committed guard, or
    /// a guard by the hash rule.
    fn stop_before(&mut self, k: &[u8]) -> bool {
        self.limit.as_deref().is_some_and(|l| k >= l) || self.rule.is_guard(k, self.level)
    }
}
