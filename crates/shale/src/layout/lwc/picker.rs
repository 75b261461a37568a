//! The LWC picker: a pure function from a version to the next compaction.
//!
//! Three kinds of work, each with a score; the highest score at or above 1 runs:
//!
//! - **Level 0** scores `files / level0_compaction_trigger` and compacts all its files
//!   (they overlap) into level 1, as in LevelDB.
//! - **A level `n >= 1`** (not the last) scores `bytes / max_bytes(n)`, LevelDB's limits;
//!   its victim is its largest table (the most data moved down per compaction; the paper
//!   leaves the choice open).
//! - **Equal division**: a table of at least two segments that grew past
//!   `max_table_size`, or holds more than `max_segments` segments, scores the larger of
//!   `size / max_table_size` and `segments / max_segments`; it is rewritten into new tables
//!   of `max_table_size / division` bytes in its own level (LWC-tree §4.4).
//!
//! When none of these can run, a table that reads charged with its whole seek allowance
//! (seek-triggered compaction, LevelDB's `allowed_seeks` adapted; the layout keeps the
//! charges in [`crate::layout::seeks`], the picker only reads them) is compacted: pushed
//! down by a lightweight compaction (as LevelDB moves the file down), or, when nothing lies
//! below its range or with `seek_merges`, its segments merged by a division (level 0: all
//! of it goes down, as for its trigger).
//!
//! A victim whose range meets tables one level down becomes a lightweight compaction
//! ([`PlanKind::Append`]): its data is appended to those tables. With nothing below it is
//! moved down (level 0's files are merged into new level-1 tables instead, as they overlap
//! one another). Plans obey the rules of [`crate::layout`]: no busy input, no output range
//! meeting a running plan's at the same level; the tables an append grows are inputs of its
//! plan, so nothing else reads or grows them meanwhile.

use std::sync::Arc;

use super::state::segments;
use crate::layout::seeks::SeekDue;
use crate::layout::{PickContext, Plan, PlanKind};
use crate::version::{FileMeta, Version};

/// The numbers the picker needs (a copy of the relevant options).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PickerConfig {
    /// Level-0 files that trigger a compaction.
    pub level0_trigger: usize,
    /// Size of level 1 before it is compacted.
    pub base_bytes: u64,
    /// Growth factor between levels.
    pub multiplier: u64,
    /// A DTable that grew past this by appends is divided.
    pub max_table_size: u64,
    /// Tables a division makes of an oversized one (about `max_table_size / division`
    /// bytes each).
    pub division: u64,
    /// A DTable holding more segments than this is divided too.
    pub max_segments: u32,
    /// A table due for seeks that holds several segments has them merged in its own level
    /// rather than being pushed down (`LwcOptions::seek_compaction_merges`).
    pub seek_merges: bool,
}

impl PickerConfig {
    /// The size limit of `level` (>= 1).
    pub fn max_bytes(&self, level: usize) -> u64 {
        crate::layout::level_budget(self.base_bytes, self.multiplier, level)
    }

    /// The size of the tables a merge writes (a division's pieces, level 0's first tables).
    pub fn new_table_size(&self) -> u64 {
        (self.max_table_size / self.division.max(1)).max(4096)
    }

    /// How much `f` (at a level >= 1 of `v`) needs dividing: 0 when it must not be (one
    /// segment: its division would rewrite it as it is), else the larger of its size and its
    /// segment count against their limits.
    pub fn division_score(&self, v: &Version, f: &FileMeta) -> f64 {
        let segs = segments(v, f.number);
        if segs < 2 {
            return 0.0;
        }
        let by_size = f.size as f64 / self.max_table_size.max(1) as f64;
        let by_segments = f64::from(segs) / f64::from(self.max_segments.max(1));
        by_size.max(by_segments)
    }
}

/// One piece of work the picker may choose.
#[derive(Clone, Debug)]
enum Work {
    /// Compact level 0, or move a victim of this level down.
    Level(usize),
    /// Divide this table.
    Divide(usize, Arc<FileMeta>),
}

/// The next compaction that can run next to the `running` ones, if some score is at
/// least 1; else the compaction of the first table of `seek_due` (tables whose seek
/// allowance reads used up, in the order they did) that can run. See the module docs.
pub fn pick(
    v: &Version,
    cfg: &PickerConfig,
    running: &PickContext,
    seek_due: &[SeekDue],
) -> Option<Plan> {
    pick_by_score(v, cfg, running).or_else(|| pick_by_seeks(v, cfg, running, seek_due))
}

/// The compaction of the highest score at least 1 that can run.
fn pick_by_score(v: &Version, cfg: &PickerConfig, running: &PickContext) -> Option<Plan> {
    let mut work: Vec<(f64, Work)> = Vec::new();
    let last = v.num_levels().saturating_sub(1);
    for level in 0..last {
        let idle = v.level(level).iter().filter(|f| !running.is_busy(f));
        let score = if level == 0 {
            idle.count() as f64 / cfg.level0_trigger.max(1) as f64
        } else {
            idle.map(|f| f.size).sum::<u64>() as f64 / cfg.max_bytes(level) as f64
        };
        if score >= 1.0 {
            work.push((score, Work::Level(level)));
        }
    }
    for level in 1..v.num_levels() {
        for f in v.level(level).iter().filter(|f| !running.is_busy(f)) {
            let score = cfg.division_score(v, f);
            if score > 1.0 {
                work.push((score, Work::Divide(level, Arc::clone(f))));
            }
        }
    }
    // Highest score first; on a tie levels before divisions, shallower first.
    work.sort_by(|a, b| {
        b.0.total_cmp(&a.0).then_with(|| {
            let key = |w: &Work| match w {
                Work::Level(l) => (0, *l, 0),
                Work::Divide(l, f) => (1, *l, f.number),
            };
            key(&a.1).cmp(&key(&b.1))
        })
    });
    work.into_iter().find_map(|(score, w)| match w {
        Work::Level(0) => {
            if v.level(0).iter().any(|f| running.is_busy(f)) {
                return None;
            }
            let reason = format!(
                "L0 has {} files (trigger {})",
                v.level(0).len(),
                cfg.level0_trigger
            );
            Some(plan_victims(v, 0, v.level(0).to_vec(), reason)).filter(|p| running.allows(p))
        }
        Work::Level(level) => {
            let mut victims: Vec<&Arc<FileMeta>> = v
                .level(level)
                .iter()
                .filter(|f| !running.is_busy(f))
                .collect();
            victims.sort_by(|a, b| b.size.cmp(&a.size).then(a.number.cmp(&b.number)));
            victims.into_iter().find_map(|f| {
                let reason = format!("L{level} score {score:.2}");
                Some(plan_victims(v, level, vec![Arc::clone(f)], reason))
                    .filter(|p| running.allows(p))
            })
        }
        Work::Divide(level, f) => {
            let reason = format!(
                "L{level} table {} of {} bytes in {} segments (division score {score:.2})",
                f.number,
                f.size,
                segments(v, f.number)
            );
            Some(plan_division(level, f, reason)).filter(|p| running.allows(p))
        }
    })
}

/// The compaction of the first table of `seek_due` still in its level that can run: level
/// 0's files all go down; a table of several segments with nothing below its range (or with
/// `cfg.seek_merges`) has its segments merged by a division; any other table with data
/// below its range is pushed down. A table of one segment with nothing below stays.
fn pick_by_seeks(
    v: &Version,
    cfg: &PickerConfig,
    running: &PickContext,
    seek_due: &[SeekDue],
) -> Option<Plan> {
    let last = v.num_levels().saturating_sub(1);
    seek_due.iter().find_map(|&(level, number)| {
        let f = v.level(level).iter().find(|f| f.number == number)?;
        if running.is_busy(f) {
            return None;
        }
        let reason = format!("seeks used up the allowance of L{level} table {number}");
        let plan = if level == 0 {
            if v.level(0).iter().any(|f| running.is_busy(f)) {
                return None;
            }
            plan_victims(v, 0, v.level(0).to_vec(), reason)
        } else {
            let (lo, hi) = (f.smallest_user_key(), f.largest_user_key());
            let below =
                (level + 1..=last).any(|l| !v.overlapping(l, Some(lo), Some(hi)).is_empty());
            if segments(v, number) >= 2 && (cfg.seek_merges || !below) {
                plan_division(level, Arc::clone(f), reason)
            } else if below {
                plan_victims(v, level, vec![Arc::clone(f)], reason)
            } else {
                return None;
            }
        };
        Some(plan).filter(|p| running.allows(p))
    })
}

/// Push `victims` (of `level`) into the next level: an append to the tables their range
/// meets there, or, when it meets none, a move (level 0: a merge into new tables).
pub fn plan_victims(
    v: &Version,
    level: usize,
    victims: Vec<Arc<FileMeta>>,
    reason: String,
) -> Plan {
    let (lo, hi) = crate::layout::leveled::picker::user_range(&victims);
    let below = v.overlapping(level + 1, Some(&lo), Some(&hi));
    let kind = match (below.is_empty(), level) {
        (false, _) => PlanKind::Append,
        (true, 0) => PlanKind::Merge,
        (true, _) => PlanKind::Move,
    };
    let mut inputs = vec![(level, victims)];
    if !below.is_empty() {
        inputs.push((level + 1, below));
    }
    Plan {
        kind,
        inputs,
        output_level: level + 1,
        reason,
    }
}

/// Rewrite table `f` of `level` into new tables of the same level.
pub fn plan_division(level: usize, f: Arc<FileMeta>, reason: String) -> Plan {
    Plan {
        kind: PlanKind::Merge,
        inputs: vec![(level, vec![f])],
        output_level: level,
        reason,
    }
}

/// Manual compaction: the files of `level` overlapping `[begin, end]` (level 0: all its
/// files) pushed into the next level. `None` when the level holds nothing in the range or
/// is the last.
pub fn pick_range(
    v: &Version,
    level: usize,
    begin: Option<&[u8]>,
    end: Option<&[u8]>,
) -> Option<Plan> {
    let victims = crate::layout::manual_inputs(v, level, begin, end)?;
    Some(plan_victims(
        v,
        level,
        victims,
        "manual compaction".to_string(),
    ))
}
