//! The leveled layout (LevelDB): level 0 holds flushed memtables, which may overlap; every
//! deeper level holds disjoint files, and each level may hold about `multiplier` times more
//! than the one above. A user key's versions never straddle two files of a level >= 1
//! (outputs are cut only at user-key boundaries), so a lookup reads at most one file per
//! level.

pub mod picker;

use std::cmp::Ordering;
use std::sync::Arc;

use super::{Layout, PROBE_BATCH, PickContext, Plan, PlanKind, ReadContext};
use crate::compaction::{CompactionContext, MergeSpec, merge_into_tables};
use crate::env::ReadCause;
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::iter::merging::MergingIterator;
use crate::key::compare_internal;
use crate::layout::concat::{ConcatIterator, FileOpener};
use crate::manifest::VersionEdit;
use crate::options::Options;
use crate::table::bloom;
use crate::version::{FileMeta, Version};
use picker::PickerConfig;

/// See the module documentation.
#[derive(Debug)]
pub struct Leveled {
    cfg: PickerConfig,
    target_file_size: u64,
}

impl Leveled {
    /// A leveled layout configured from `options`.
    pub fn new(options: &Options) -> Leveled {
        Leveled {
            cfg: PickerConfig {
                level0_trigger: options.level0_compaction_trigger,
                base_bytes: options.max_bytes_for_level_base,
                multiplier: options.level_size_multiplier,
            },
            target_file_size: options.target_file_size,
        }
    }
}

/// The file of a disjoint, sorted level that may hold `seek_key`.
fn find_file<'a>(files: &'a [Arc<FileMeta>], seek_key: &[u8]) -> Option<&'a Arc<FileMeta>> {
    let i = files.partition_point(|f| compare_internal(&f.largest, seek_key) == Ordering::Less);
    files.get(i)
}

/// An opener for a level iterator: tables come from the cache, reads count under `cause`.
fn opener(ctx: &ReadContext<'_>) -> FileOpener {
    let tables = Arc::clone(ctx.tables);
    let cause = ctx.cause;
    Arc::new(move |f: &FileMeta| {
        Ok(tables.table(f.table_id())?.iter(cause))
    })
}

impl Layout for Leveled {
    fn name(&self) -> &'static str {
        "leveled"
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
        // The one table per level that may hold the key, all filters asked at once (see
        // `ReadContext::probe`): most keys of a loaded store live in the deepest level, so
        // the filters of the levels above are asked anyway.
        let mut level = 1;
        while level < version.num_levels() {
            let end = (level + PROBE_BATCH).min(version.num_levels());
            let files = (level..end)
                .filter_map(|l| find_file(version.level(l), seek_key))
                .map(|f| &**f);
            let mut p = ctx.probe(files, user_key, hash);
            for i in 0..PROBE_BATCH {
                if let Some((t, true)) = p.slot(i)?
                    && let Some(hit) = t.lookup(user_key, seek_key, ctx.cause)?
                {
                    return Ok(Some(hit));
                }
            }
            level = end;
        }
        Ok(None)
    }

    fn iterators(
        &self,
        version: &Arc<Version>,
        ctx: &ReadContext<'_>,
    ) -> Result<Vec<Box<dyn InternalIterator>>> {
        let mut out: Vec<Box<dyn InternalIterator>> = Vec::new();
        for f in version.level(0) {
            out.push(ctx.tables.table(f.table_id())?.iter(ctx.cause));
        }
        for level in 1..version.num_levels() {
            let files = version.level(level);
            if !files.is_empty() {
                out.push(Box::new(ConcatIterator::new(files.to_vec(), opener(ctx))));
            }
        }
        Ok(out)
    }

    fn pick(&self, version: &Version, running: &PickContext) -> Option<Plan> {
        picker::pick(version, &self.cfg, running)
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
        // Level 0's files overlap: a manual compaction's steps always push them down first.
        let level = (1..version.num_levels())
            .rev()
            .find(|&l| !version.overlapping(l, begin, end).is_empty())?;
        Some(Plan {
            kind: PlanKind::Merge,
            inputs: vec![(level, version.overlapping(level, begin, end))],
            output_level: level,
            reason: "manual compaction of the last level (compaction filter)".to_string(),
        })
    }

    fn compact(&self, plan: &Plan, ctx: &CompactionContext<'_>) -> Result<VersionEdit> {
        // Files leave their levels here; what replaces them is written below.
        let mut edit = plan.delete_inputs();
        let read_ctx = ReadContext {
            tables: ctx.tables,
            cause: ReadCause::Compaction,
        };
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
        for (level, files) in &plan.inputs {
            if files.is_empty() {
                continue;
            }
            if *level == 0 {
                for f in files {
                    children.push(ctx.tables.table(f.table_id())?.iter(ReadCause::Compaction));
                }
            } else {
                children.push(Box::new(ConcatIterator::new(
                    files.clone(),
                    opener(&read_ctx),
                )));
            }
        }
        let mut merged = MergingIterator::new(children);
        let deeper: Vec<Vec<Arc<FileMeta>>> = plan_deeper_levels(plan, ctx);
        let is_base = |user_key: &[u8]| {
            deeper.iter().all(|files| {
                let i = files.partition_point(|f| f.largest_user_key() < user_key);
                files
                    .get(i)
                    .is_none_or(|f| f.smallest_user_key() > user_key)
            })
        };
        let spec = MergeSpec {
            target_file_size: self.target_file_size,
            is_base_for_key: &is_base,
            level: plan.output_level,
        partition: None,
        };
        let (outputs, _stats) = merge_into_tables(&mut merged, &spec, ctx)?;
        for f in outputs {
            edit.new_files.push((plan.output_level as u32, f));
        }
        Ok(edit)
    }
}

/// The files of every level below the plan's output level, taken from the version current
/// when the plan started to run (the engine passes it through the context; other plans may
/// have committed since the pick). Deciding from it whether an output holds the oldest
/// entry of a key stays correct: entries for a key in the plan's range could only reach a
/// deeper level through a plan reading a busy file or writing into the busy output range,
/// and the picker allows neither; any file deeper that merely spans the key keeps the
/// tombstone, which is the safe side.
fn plan_deeper_levels(plan: &Plan, ctx: &CompactionContext<'_>) -> Vec<Vec<Arc<FileMeta>>> {
    let v = ctx.version;
    ((plan.output_level + 1)..v.num_levels())
        .map(|l| v.level(l).to_vec())
        .collect()
}
