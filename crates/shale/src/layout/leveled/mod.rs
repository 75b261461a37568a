//! The leveled layout (LevelDB): level 0 holds flushed memtables, which may overlap; every
//! deeper level holds disjoint files, and each level may hold about `multiplier` times more
//! than the one above. A user key's versions never straddle two files of a level >= 1
//! (outputs are cut only at user-key boundaries), so a lookup reads at most one file per
//! level.
//!
//! Two of LevelDB's rules are options ([`crate::options::LeveledOptions`]): compaction
//! outputs are cut by their overlap with the level below them ([`cut`]), and reads that look
//! into several tables for a key charge the first one until it is compacted ([`crate::layout::seeks`]).

pub mod cut;
pub mod picker;
#[cfg(test)]
mod tests;

use std::cmp::Ordering;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};

use super::{Layout, PROBE_BATCH, PickContext, Plan, PlanKind, ReadContext};
use crate::compaction::{CompactionContext, MergeSpec};
use crate::env::ReadCause;
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::iter::merging::MergingIterator;
use crate::key::compare_internal;
use crate::layout::concat::{ConcatIterator, FileOpener};
use crate::layout::cut::{Cut, merge_cut};
use crate::layout::seeks::SeekCharges;
use crate::manifest::VersionEdit;
use crate::options::Options;
use crate::table::bloom;
use crate::version::{FileMeta, Version};
use cut::GrandparentOverlap;
use parking_lot::Mutex;
use picker::{PickMemory, PickerConfig};

/// LevelDB's `ExpandedCompactionByteSizeLimit`: a compaction of a level >= 1 takes in more
/// files of its level while its inputs stay under this many target files.
const EXPANDED_COMPACTION_FILES: u64 = 25;

/// See the module documentation.
#[derive(Debug)]
pub struct Leveled {
    cfg: PickerConfig,
    target_file_size: u64,
    /// Seek counters; `None` when seek-triggered compaction is off.
    seeks: Option<SeekCharges>,
    /// By level, where its last compaction ended (LevelDB's compact pointers; used with
    /// `round_robin`).
    pointers: Mutex<Vec<Vec<u8>>>,
    /// Set when a get used up a table's seek allowance; taken by the engine to wake
    /// compaction.
    wanted: AtomicBool,
}

impl Leveled {
    /// A leveled layout configured from `options`.
    pub fn new(options: &Options) -> Leveled {
        let l = &options.leveled;
        let max_grandparent_overlap = match l.max_grandparent_overlap_factor {
            0 => u64::MAX,
            factor => factor.saturating_mul(options.target_file_size),
        };
        Leveled {
            cfg: PickerConfig {
                level0_trigger: options.level0_compaction_trigger,
                base_bytes: options.max_bytes_for_level_base,
                multiplier: options.level_size_multiplier,
                max_grandparent_overlap,
                expanded_compaction_bytes: EXPANDED_COMPACTION_FILES
                    .saturating_mul(options.target_file_size),
                round_robin: l.round_robin,
            },
            target_file_size: options.target_file_size,
            seeks: l.seek_compaction.then(|| {
                SeekCharges::new(
                    l.seek_compaction_min_seeks,
                    l.seek_compaction_bytes_per_seek,
                )
            }),
            pointers: Mutex::new(Vec::new()),
            wanted: AtomicBool::new(false),
        }
    }

    /// The newest entry for `user_key` at or below `seek_key`'s snapshot: level 0 newest
    /// first, then the one table per level that may hold the key, the filters of a batch of
    /// tables asked at once (see `ReadContext::probe`: most keys of a loaded store live in
    /// the deepest level, so the filters of the levels above are asked anyway). Every table
    /// whose range holds the key, up to the one that answers, is noted in `probes`.
    pub(crate) fn search<'v>(
        &self,
        version: &'v Version,
        ctx: &ReadContext<'_>,
        user_key: &[u8],
        seek_key: &[u8],
        probes: &mut Probes<'v>,
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let hash = bloom::hash64(user_key);
        for files in version.level(0).chunks(PROBE_BATCH) {
            let mut p = ctx.probe(files.iter().map(|f| &**f), user_key, hash);
            for (i, f) in files.iter().enumerate() {
                if p.asked(i) {
                    probes.note(0, f);
                }
                if let Some((t, true)) = p.slot(i)?
                    && let Some(hit) = t.lookup(user_key, seek_key, ctx.read)?
                {
                    return Ok(Some(hit));
                }
            }
        }
        let mut level = 1;
        while level < version.num_levels() {
            let end = (level + PROBE_BATCH).min(version.num_levels());
            let mut batch: [Option<(usize, &'v FileMeta)>; PROBE_BATCH] = [None; PROBE_BATCH];
            let mut n = 0;
            for l in level..end {
                if let Some(f) = find_file(version.level(l), seek_key) {
                    batch[n] = Some((l, &**f));
                    n += 1;
                }
            }
            let mut p = ctx.probe(batch.iter().flatten().map(|&(_, f)| f), user_key, hash);
            for (i, &(l, f)) in batch.iter().flatten().enumerate() {
                if p.asked(i) {
                    probes.note(l, f);
                }
                if let Some((t, true)) = p.slot(i)?
                    && let Some(hit) = t.lookup(user_key, seek_key, ctx.read)?
                {
                    return Ok(Some(hit));
                }
            }
            level = end;
        }
        Ok(None)
    }

    /// Charge the first table `probes` looked into, when a read looked into more than one.
    /// Returns true when that used up the table's allowance.
    fn charge(&self, probes: &Probes<'_>) -> bool {
        match (&self.seeks, probes.first) {
            (Some(seeks), Some((level, f))) if probes.more => seeks.charge(level, f),
            _ => false,
        }
    }
}

/// The tables a read looked into for one key, in the order it did (LevelDB's `GetStats`):
/// the first, and whether there was another.
#[derive(Default)]
pub(crate) struct Probes<'a> {
    /// The first table, and its level.
    pub(crate) first: Option<(usize, &'a FileMeta)>,
    /// Whether the read looked into another table after it.
    pub(crate) more: bool,
}

impl<'a> Probes<'a> {
    /// As LevelDB's `RecordReadSample`: the tables of `version` whose range holds
    /// `user_key`, level 0 newest first and then one per level, up to the second.
    pub(crate) fn sample(version: &'a Version, user_key: &[u8]) -> Probes<'a> {
        let mut probes = Probes::default();
        for f in version.level(0) {
            if holds(f, user_key) {
                probes.note(0, f);
            }
        }
        for level in 1..version.num_levels() {
            if probes.more {
                break;
            }
            let files = version.level(level);
            let i = files.partition_point(|f| f.largest_user_key() < user_key);
            if let Some(f) = files.get(i)
                && holds(f, user_key)
            {
                probes.note(level, f);
            }
        }
        probes
    }

    fn note(&mut self, level: usize, f: &'a FileMeta) {
        if self.first.is_none() {
            self.first = Some((level, f));
        } else {
            self.more = true;
        }
    }
}

/// The file of a disjoint, sorted level that may hold `seek_key`.
fn find_file<'a>(files: &'a [Arc<FileMeta>], seek_key: &[u8]) -> Option<&'a Arc<FileMeta>> {
    let i = files.partition_point(|f| compare_internal(&f.largest, seek_key) == Ordering::Less);
    files.get(i)
}

/// True when `f`'s user-key range holds `key`.
fn holds(f: &FileMeta, key: &[u8]) -> bool {
    f.smallest_user_key() <= key && key <= f.largest_user_key()
}

/// An opener for a level iterator: tables come from the cache, read as `ctx.read` says.
fn opener(ctx: &ReadContext<'_>) -> FileOpener {
    let tables = Arc::clone(ctx.tables);
    let read = ctx.read;
    Arc::new(move |f: &FileMeta| Ok(tables.table(f.table_id())?.iter(read)))
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
        let mut probes = Probes::default();
        let found = self.search(version, ctx, user_key, seek_key, &mut probes)?;
        if self.charge(&probes) {
            self.wanted.store(true, AtomicOrdering::Release);
        }
        Ok(found)
    }

    fn take_compaction_wanted(&self) -> bool {
        self.wanted.load(AtomicOrdering::Relaxed) && self.wanted.swap(false, AtomicOrdering::AcqRel)
    }

    /// As LevelDB's `RecordReadSample`: the tables whose range holds `user_key`, level 0
    /// newest first and then one per level; when there are two or more, the first is charged
    /// one seek. (A seek itself charges nothing, as in LevelDB: the entry it lands on is
    /// counted towards the next sample.)
    fn note_read_sample(&self, version: &Version, user_key: &[u8]) -> bool {
        if self.seeks.is_none() {
            return false;
        }
        self.charge(&Probes::sample(version, user_key))
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
        for level in 1..version.num_levels() {
            let files = version.level(level);
            if !files.is_empty() {
                out.push(Box::new(ConcatIterator::new(files.to_vec(), opener(ctx))));
            }
        }
        Ok(out)
    }

    fn pick(&self, version: &Version, running: &PickContext) -> Option<Plan> {
        let memory = PickMemory {
            seek_due: self
                .seeks
                .as_ref()
                .map(|s| s.due(version))
                .unwrap_or_default(),
            pointers: if self.cfg.round_robin {
                self.pointers.lock().clone()
            } else {
                Vec::new()
            },
        };
        let plan = picker::pick(version, &self.cfg, running, &memory)?;
        if let Some(seeks) = &self.seeks {
            seeks.forget(&plan);
        }
        // The level's next compaction starts after this one (LevelDB sets its compact
        // pointer when it picks, so a failed compaction is not retried on the same files).
        if self.cfg.round_robin
            && let Some((level, files)) = plan.inputs.first()
            && let Some(largest) = files.iter().map(|f| f.largest_user_key()).max()
        {
            let mut pointers = self.pointers.lock();
            if pointers.len() <= *level {
                pointers.resize(*level + 1, Vec::new());
            }
            if let Some(p) = pointers.get_mut(*level) {
                p.clear();
                p.extend_from_slice(largest);
            }
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
            read: ReadCause::Compaction.into(),
        };
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
        for (level, files) in &plan.inputs {
            if files.is_empty() {
                continue;
            }
            if *level == 0 {
                for f in files {
                    children.push(
                        ctx.tables
                            .table(f.table_id())?
                            .iter(ReadCause::Compaction.into()),
                    );
                }
            } else {
                children.push(Box::new(ConcatIterator::new(
                    files.clone(),
                    opener(&read_ctx),
                )));
            }
        }
        let merged = MergingIterator::new(children);
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
            pile: None,
        };
        // The level below the output, where the outputs' overlap is limited.
        let grandparents = match (plan.user_range(), self.cfg.max_grandparent_overlap) {
            (Some((lo, hi)), limit) if limit != u64::MAX => {
                ctx.version
                    .overlapping(plan.output_level + 1, Some(&lo), Some(&hi))
            }
            _ => Vec::new(),
        };
        let overlap = GrandparentOverlap::new(grandparents, self.cfg.max_grandparent_overlap);
        let mut cut = Cut::new(merged, overlap);
        for f in merge_cut(&mut cut, &spec, ctx)? {
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
