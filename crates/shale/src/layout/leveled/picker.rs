//! The leveled picker: a pure function from a version to the next compaction.
//!
//! Scores follow LevelDB and RocksDB: level 0 scores `files / level0_compaction_trigger`,
//! level `n >= 1` scores `bytes / max_bytes(n)` with `max_bytes(1) = base` and a fixed
//! multiplier per level. The highest score at or above 1 is compacted. Level 0 compacts all
//! its files (they may overlap each other, and keeping newer data above older data is simplest
//! when the level moves down together). For a deeper level the picker takes the file with the
//! smallest ratio of overlapping bytes in the next level to its own size (RocksDB's
//! `kMinOverlappingRatio`): the file that costs the least rewriting per byte moved down.

use std::sync::Arc;

use crate::layout::{Plan, PlanKind};
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
}

impl PickerConfig {
    /// The size limit of `level` (>= 1).
    pub fn max_bytes(&self, level: usize) -> u64 {
        let mut b = self.base_bytes;
        for _ in 1..level {
            b = b.saturating_mul(self.multiplier);
        }
        b
    }
}

/// The score of every level but the last (the last level has no limit).
pub fn scores(v: &Version, cfg: &PickerConfig) -> Vec<f64> {
    let last = v.num_levels().saturating_sub(1);
    (0..last)
        .map(|level| {
            if level == 0 {
                v.level(0).len() as f64 / cfg.level0_trigger.max(1) as f64
            } else {
                v.level_bytes(level) as f64 / cfg.max_bytes(level) as f64
            }
        })
        .collect()
}

/// The next compaction, if any level's score is at least 1.
pub fn pick(v: &Version, cfg: &PickerConfig) -> Option<Plan> {
    let scores = scores(v, cfg);
    let (level, score) = scores
        .iter()
        .copied()
        .enumerate()
        .filter(|&(_, s)| s >= 1.0)
        .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))?;
    let reason = if level == 0 {
        format!(
            "L0 has {} files (trigger {})",
            v.level(0).len(),
            cfg.level0_trigger
        )
    } else {
        format!("L{level} score {score:.2}")
    };
    if level == 0 {
        return Some(plan_level0(v, reason));
    }
    let files = v.level(level);
    let chosen = files.iter().min_by_key(|f| {
        let overlap: u64 = v
            .overlapping(
                level + 1,
                Some(f.smallest_user_key()),
                Some(f.largest_user_key()),
            )
            .iter()
            .map(|g| g.size)
            .sum();
        // overlap per byte of the file, scaled to stay in integers
        (overlap.saturating_mul(1024) / f.size.max(1), f.number)
    })?;
    Some(plan_file(v, level, Arc::clone(chosen), reason))
}

/// Compact all of level 0 into level 1.
fn plan_level0(v: &Version, reason: String) -> Plan {
    let l0: Vec<Arc<FileMeta>> = v.level(0).to_vec();
    let (lo, hi) = user_range(&l0);
    let l1 = v.overlapping(1, Some(&lo), Some(&hi));
    Plan {
        kind: PlanKind::Merge,
        inputs: vec![(0, l0), (1, l1)],
        output_level: 1,
        reason,
    }
}

/// Compact one file of `level >= 1` into the next level; a move when nothing overlaps.
fn plan_file(v: &Version, level: usize, f: Arc<FileMeta>, reason: String) -> Plan {
    let below = v.overlapping(
        level + 1,
        Some(f.smallest_user_key()),
        Some(f.largest_user_key()),
    );
    let kind = if below.is_empty() {
        PlanKind::Move
    } else {
        PlanKind::Merge
    };
    Plan {
        kind,
        inputs: vec![(level, vec![f]), (level + 1, below)],
        output_level: level + 1,
        reason,
    }
}

/// The smallest and largest user key of a set of files.
pub fn user_range(files: &[Arc<FileMeta>]) -> (Vec<u8>, Vec<u8>) {
    let lo = files
        .iter()
        .map(|f| f.smallest_user_key())
        .min()
        .unwrap_or_default();
    let hi = files
        .iter()
        .map(|f| f.largest_user_key())
        .max()
        .unwrap_or_default();
    (lo.to_vec(), hi.to_vec())
}

/// Manual compaction: the files of `level` overlapping `[begin, end]`, merged into the next
/// level (level 0 takes all its files, as automatic compaction does). `None` when the level
/// holds nothing in the range or is the last.
pub fn pick_range(
    v: &Version,
    level: usize,
    begin: Option<&[u8]>,
    end: Option<&[u8]>,
) -> Option<Plan> {
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
    if inputs.is_empty() {
        return None;
    }
    let (lo, hi) = user_range(&inputs);
    let below = v.overlapping(level + 1, Some(&lo), Some(&hi));
    Some(Plan {
        kind: PlanKind::Merge,
        inputs: vec![(level, inputs), (level + 1, below)],
        output_level: level + 1,
        reason: "manual compaction".to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::text;

    fn cfg() -> PickerConfig {
        PickerConfig {
            level0_trigger: 4,
            base_bytes: 10 << 20,
            multiplier: 10,
        }
    }

    /// Run the picker on a described tree and print its decision.
    fn run(desc: &str) -> String {
        let v = text::parse(desc).unwrap();
        match pick(&v, &cfg()) {
            Some(p) => format!("{} because {}", p.describe(), p.reason),
            None => "nothing".to_string(),
        }
    }

    #[test]
    fn nothing_below_the_triggers() {
        assert_eq!(run(""), "nothing");
        assert_eq!(run("L0: 1:a-c 2:b-d 3:a-z\nL1: 4:a-m/5M"), "nothing");
    }

    #[test]
    fn level0_compacts_all_files_with_overlapping_l1() {
        assert_eq!(
            run("L0: 1:c-e 2:d-f 3:e-g 4:c-d\nL1: 5:a-b 6:c-d 7:f-h 8:x-z"),
            "L0[4,3,2,1]+L1[6,7] -> L1 (merge) because L0 has 4 files (trigger 4)"
        );
    }

    #[test]
    fn deeper_level_prefers_least_overlap() {
        // L1 is 12M over a 10M limit. File 3 overlaps 8M below, file 4 nothing: 4 moves.
        assert_eq!(
            run("L1: 3:a-f/6M 4:g-k/6M\nL2: 10:a-c/4M 11:d-f/4M 12:m-p/1M"),
            "L1[4] -> L2 (move) because L1 score 1.20"
        );
        assert_eq!(
            run("L1: 3:a-f/6M 4:g-k/6M\nL2: 10:a-c/4M 11:d-f/4M 12:h-p/20M"),
            "L1[3]+L2[10,11] -> L2 (merge) because L1 score 1.20"
        );
    }

    #[test]
    fn highest_score_wins_and_last_level_is_never_picked() {
        // L0 score 1.0, L2 score 2.0 (limit 100M).
        assert_eq!(
            run("L0: 1:a-b 2:a-b 3:a-b 4:a-b\nL2: 5:a-z/200M"),
            "L2[5] -> L3 (move) because L2 score 2.00"
        );
        assert_eq!(run("L6: 1:a-z/900G"), "nothing");
    }

    #[test]
    fn manual_range() {
        let v = text::parse("L0: 1:a-c\nL1: 2:a-b 3:x-z\nL2: 4:a-z").unwrap();
        let p = pick_range(&v, 1, Some(b"w"), None).unwrap();
        assert_eq!(p.describe(), "L1[3]+L2[4] -> L2 (merge)");
        assert!(pick_range(&v, 1, Some(b"c"), Some(b"d")).is_none());
        assert!(pick_range(&v, 6, None, None).is_none());
        assert_eq!(
            pick_range(&v, 0, None, None).unwrap().describe(),
            "L0[1]+L1[2] -> L1 (merge)"
        );
    }
}
