//! The LWC-tree layout (Yao et al., "Building Efficient Key-Value Stores via a Lightweight
//! Compaction Tree", ACM TOS 2017; `docs/designs/lwc.md`): levels of disjoint DTables
//! (`table/dtable`, the appendable format), compacted by *lightweight compaction*.
//!
//! A victim table of level `n` is read once, its entries merged (shadowed versions and
//! tombstones dropped by the usual rules), split by the key ranges of the tables it meets
//! in level `n + 1`, and each part is appended to its table as a new segment: the lower
//! tables' data is neither read nor rewritten, only their small commit records are. Keys
//! between two lower tables go to the smaller of the two (the paper's workload balance,
//! done at routing time: nothing moves), keys beyond the outermost go to it. A table that
//! grew past `target_file_size` (the paper's band), or holds more than
//! `lwc.max_segments` segments, is divided into `lwc.division` new tables in its own level
//! (equal division, §4.4). Level 0 and the read path are LevelDB's: newest level-0 table
//! first, then at most one table per level, whose segments a lookup asks newest first.
//!
//! Reads charge seeks as LevelDB's do (`lwc.seek_compaction`, [`crate::layout::seeks`]): a
//! get that looks into more than one table for its key, or into a table of more than one
//! segment, charges the first table it looked into, and so does a sample of a user
//! iterator's reads; a table that absorbed its allowance is compacted when nothing else is
//! due (the picker decides how: see `picker.rs`).
//!
//! Every append commits like any table change: the DTable's new footer is synced, then the
//! MANIFEST edit records the table's new size (`PlanKind::Append`); a crash in between
//! leaves a tail the committed generation does not include.

mod picker;
mod state;

#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};

use crate::compaction::merge_into_tables;
use crate::compaction::{AppendSpec, CompactionContext, MergeSpec, merge_into_appends};
use crate::env::ReadCause;
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::iter::merging::MergingIterator;
use crate::layout::concat::{ConcatIterator, FileOpener};
use crate::layout::leveled::{Leveled, Probes};
use crate::layout::seeks::SeekCharges;
use crate::layout::{Layout, PickContext, Plan, PlanKind, ReadContext};
use crate::manifest::VersionEdit;
use crate::options::Options;
use crate::version::{FileMeta, LayoutState, Version};

pub use picker::PickerConfig;
pub use state::{LwcState, SEGMENTS, segments, segments_record};

/// See the module documentation.
#[derive(Debug)]
pub struct Lwc {
    cfg: PickerConfig,
    /// Reads: the leveled layout's read path serves any tree of disjoint levels (with its
    /// own seek charges off: this layout keeps its own).
    reads: Leveled,
    /// Seek counters; `None` when seek-triggered compaction is off.
    seeks: Option<SeekCharges>,
    /// Set when a read used up a table's seek allowance; taken by the engine to wake
    /// compaction.
    wanted: AtomicBool,
}

impl Lwc {
    /// An LWC layout configured from `options`.
    pub fn new(options: &Options) -> Lwc {
        Lwc {
            cfg: PickerConfig {
                level0_trigger: options.level0_compaction_trigger,
                base_bytes: options.max_bytes_for_level_base,
                multiplier: options.level_size_multiplier,
                max_table_size: options.target_file_size,
                division: options.lwc.division as u64,
                max_segments: options.lwc.max_segments,
                seek_merges: options.lwc.seek_compaction_merges,
            },
            reads: Leveled::new(&Options {
                leveled: crate::options::LeveledOptions {
                    seek_compaction: false,
                    ..options.leveled.clone()
                },
                ..options.clone()
            }),
            seeks: options.lwc.seek_compaction.then(|| {
                SeekCharges::new(
                    options.lwc.seek_compaction_min_seeks,
                    options.lwc.seek_compaction_bytes_per_seek,
                )
            }),
            wanted: AtomicBool::new(false),
        }
    }

    /// Charge the first table `probes` looked into when the read looked into another, or
    /// when that table holds more than one segment (a lookup may ask each). Returns true
    /// when that used up the table's allowance.
    fn charge(&self, version: &Version, probes: &Probes<'_>) -> bool {
        match (&self.seeks, probes.first) {
            (Some(seeks), Some((level, f))) if probes.more || segments(version, f.number) > 1 => {
                seeks.charge(level, f)
            }
            _ => false,
        }
    }

    /// The picker's configuration.
    pub fn config(&self) -> &PickerConfig {
        &self.cfg
    }
}

/// An iterator over every entry of `files` of `level` (level 0's overlap; deeper levels'
/// files are disjoint and sorted).
fn level_input(
    ctx: &CompactionContext<'_>,
    level: usize,
    files: &[Arc<FileMeta>],
    out: &mut Vec<Box<dyn InternalIterator>>,
) -> Result<()> {
    if files.is_empty() {
        return Ok(());
    }
    if level == 0 || files.len() == 1 {
        for f in files {
            out.push(
                ctx.tables
                    .table(f.table_id())?
                    .iter(ReadCause::Compaction.into()),
            );
        }
        return Ok(());
    }
    let tables = Arc::clone(ctx.tables);
    let opener: FileOpener = Arc::new(move |f: &FileMeta| {
        Ok(tables
            .table(f.table_id())?
            .iter(ReadCause::Compaction.into()))
    });
    out.push(Box::new(ConcatIterator::new(files.to_vec(), opener)));
    Ok(())
}

/// The index of the table in `targets` (disjoint, sorted) that user key `k` is appended
/// to: the one whose range holds it; for a key between two tables, the smaller of the two
/// (workload balance: the gap's keys go where there is less data); for a key before the
/// first or after the last, that one. Never decreases as `k` grows.
pub fn route(targets: &[Arc<FileMeta>], k: &[u8]) -> usize {
    let i = targets.partition_point(|t| t.largest_user_key() < k);
    let Some(next) = targets.get(i) else {
        return targets.len().saturating_sub(1);
    };
    if i == 0 || next.smallest_user_key() <= k {
        return i;
    }
    match targets.get(i - 1) {
        Some(prev) if prev.size <= next.size => i - 1,
        _ => i,
    }
}

impl Layout for Lwc {
    fn name(&self) -> &'static str {
        "lwc"
    }

    fn empty_state(&self) -> Arc<dyn LayoutState> {
        Arc::new(LwcState::default())
    }

    fn property(&self, version: &Version, name: &str) -> Option<String> {
        let level = name.strip_prefix("shale.lwc.segments-at-level")?;
        let level: usize = level.parse().ok()?;
        let total: u64 = version
            .level(level)
            .iter()
            .map(|f| u64::from(segments(version, f.number)))
            .sum();
        Some(total.to_string())
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
        let mut probes = Probes::default();
        let found = self
            .reads
            .search(version, ctx, user_key, seek_key, &mut probes)?;
        if self.charge(version, &probes) {
            self.wanted.store(true, AtomicOrdering::Release);
        }
        Ok(found)
    }

    fn take_compaction_wanted(&self) -> bool {
        self.wanted.load(AtomicOrdering::Relaxed) && self.wanted.swap(false, AtomicOrdering::AcqRel)
    }

    /// As the leveled layout's (LevelDB's `RecordReadSample`), with this layout's charge
    /// rule: the tables whose range holds `user_key`; the first is charged when there are
    /// two or more, or when it holds several segments. (A seek itself charges nothing: the
    /// entry it lands on is counted towards the next sample, as in the leveled layout.)
    fn note_read_sample(&self, version: &Version, user_key: &[u8]) -> bool {
        self.seeks.is_some() && self.charge(version, &Probes::sample(version, user_key))
    }

    fn iterators(
        &self,
        version: &Arc<Version>,
        ctx: &ReadContext<'_>,
    ) -> Result<Vec<Box<dyn InternalIterator>>> {
        self.reads.iterators(version, ctx)
    }

    fn pick(&self, version: &Version, running: &PickContext) -> Option<Plan> {
        let due = self
            .seeks
            .as_ref()
            .map(|s| s.due(version))
            .unwrap_or_default();
        let plan = picker::pick(version, &self.cfg, running, &due)?;
        if let Some(seeks) = &self.seeks {
            seeks.forget(&plan);
        }
        Some(plan)
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

    fn pick_bottom(
        &self,
        version: &Version,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Option<Plan> {
        self.reads.pick_bottom(version, begin, end)
    }

    fn compact(&self, plan: &Plan, ctx: &CompactionContext<'_>) -> Result<VersionEdit> {
        match plan.kind {
            PlanKind::Move => Ok(plan.move_edit()),
            PlanKind::Merge => self.merge(plan, ctx),
            PlanKind::Append => self.append(plan, ctx),
        }
    }
}

impl Lwc {
    /// Whether no table outside the plan's inputs at `level` or deeper (or, with `keep`,
    /// none at all there) can hold `user_key`: a tombstone for it may then be dropped. The
    /// tables are those of the version the plan was picked from (see the leveled layout's
    /// `plan_deeper_levels` for why that is safe).
    fn base_check<'a>(
        plan: &'a Plan,
        ctx: &'a CompactionContext<'_>,
        from: usize,
        count_inputs: bool,
    ) -> impl Fn(&[u8]) -> bool + 'a {
        let v = ctx.version;
        let levels: Vec<Vec<Arc<FileMeta>>> = (from..v.num_levels())
            .map(|l| {
                v.level(l)
                    .iter()
                    .filter(|f| {
                        count_inputs || !plan.input_files().any(|(_, g)| g.number == f.number)
                    })
                    .cloned()
                    .collect()
            })
            .collect();
        move |user_key: &[u8]| {
            levels.iter().all(|files| {
                let i = files.partition_point(|f| f.largest_user_key() < user_key);
                files
                    .get(i)
                    .is_none_or(|f| f.smallest_user_key() > user_key)
            })
        }
    }

    /// A merge into new tables of the output level: level 0 into an empty range of level 1,
    /// a division (a table rewritten in its own level), the filter's rewrite of the last
    /// level.
    fn merge(&self, plan: &Plan, ctx: &CompactionContext<'_>) -> Result<VersionEdit> {
        let mut edit = plan.delete_inputs();
        let mut children = Vec::new();
        for (level, files) in &plan.inputs {
            level_input(ctx, *level, files, &mut children)?;
        }
        let mut merged = MergingIterator::new(children);
        let is_base = Self::base_check(plan, ctx, plan.output_level, false);
        let spec = MergeSpec {
            target_file_size: self.cfg.new_table_size(),
            is_base_for_key: &is_base,
            level: plan.output_level,
            partition: None,
            pile: None,
        };
        let (outputs, _) = merge_into_tables(&mut merged, &spec, ctx)?;
        for f in outputs {
            edit.new_files.push((plan.output_level as u32, f));
        }
        Ok(edit)
    }

    /// A lightweight compaction: the first level's inputs merged and appended to the output
    /// level's inputs.
    fn append(&self, plan: &Plan, ctx: &CompactionContext<'_>) -> Result<VersionEdit> {
        let out = plan.output_level;
        let Some((from, victims)) = plan.inputs.first() else {
            return Ok(VersionEdit::default());
        };
        let targets: Vec<Arc<FileMeta>> = plan
            .inputs
            .iter()
            .filter(|(l, _)| *l == out)
            .flat_map(|(_, f)| f.iter().cloned())
            .collect();
        if *from >= out || targets.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "an append plan needs inputs above its output level and tables in it: {}",
                plan.describe()
            )));
        }
        let mut children = Vec::new();
        level_input(ctx, *from, victims, &mut children)?;
        let mut merged = MergingIterator::new(children);
        // The tables appended to keep their older versions: a tombstone may go only where
        // no table of the output level or below holds its key.
        let is_base = Self::base_check(plan, ctx, out, true);
        let spec = MergeSpec {
            target_file_size: u64::MAX,
            is_base_for_key: &is_base,
            level: out,
            partition: None,
            pile: None,
        };
        let route = |k: &[u8]| route(&targets, k);
        let append = AppendSpec {
            targets: &targets,
            route: &route,
        };
        let (grown, _) = merge_into_appends(&mut merged, &spec, &append, ctx)?;
        let mut edit = VersionEdit::default();
        for f in victims {
            edit.deleted_files.push((*from as u32, f.number));
        }
        for g in grown {
            let count = segments(ctx.version, g.number).saturating_add(1);
            edit.records.push(segments_record(g.number, count));
            edit.deleted_files.push((out as u32, g.number));
            edit.new_files.push((out as u32, g));
        }
        Ok(edit)
    }
}
