//! The leveled picker: a pure function from a version to the next compaction.
//!
//! Scores follow LevelDB and RocksDB: level 0 scores `files / level0_compaction_trigger`,
//! level `n >= 1` scores `bytes / max_bytes(n)` with `max_bytes(1) = base` and a fixed
//! multiplier per level. The highest score at or above 1 is compacted. Level 0 compacts all
//! its files (they may overlap each other, and keeping newer data above older data is simplest
//! when the level moves down together). For a deeper level the picker takes the file with the
//! smallest ratio of overlapping bytes in the next level to its own size (RocksDB's
//! `kMinOverlappingRatio`): the file that costs the least rewriting per byte moved down; or,
//! with `round_robin`, the first file after where the level's last compaction ended
//! (LevelDB's compact pointer), wrapping around at the end of the key space.
//! Then, as LevelDB's `SetupOtherInputs`, it takes in the other files of that level that
//! fit in the range of the next level's files it rewrites anyway, while the compaction
//! stays under `expanded_compaction_bytes`.
//!
//! A file with nothing below it moves down by a metadata edit, unless its range holds more
//! than `max_grandparent_overlap` bytes of the level below that (LevelDB's `IsTrivialMove`):
//! then it is rewritten into the next level, where the merge cuts it into files that each
//! overlap at most that much (`super::cut::GrandparentOverlap`). Level 0 moves down the same way when
//! its files overlap neither each other nor level 1 (sequential loads).
//!
//! When no level is over its limit, a file that reads have charged with its whole seek
//! allowance (seek-triggered compaction, LevelDB's `allowed_seeks`; the layout counts the
//! charges) is compacted into the next level.

use std::sync::Arc;

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
    /// The most bytes of level `n + 2` that a file moved into level `n + 1` may overlap
    /// (LevelDB's `kMaxGrandParentOverlapBytes`); `u64::MAX` for no limit.
    pub max_grandparent_overlap: u64,
    /// The most input bytes a compaction of a level `>= 1` grows to when it takes in more
    /// files of its level (LevelDB's `ExpandedCompactionByteSizeLimit`, 25 target files).
    pub expanded_compaction_bytes: u64,
    /// Take a level's files in key order from where its last compaction ended (LevelDB's
    /// compact pointer) instead of by least overlap.
    pub round_robin: bool,
}

impl PickerConfig {
    /// The size limit of `level` (>= 1).
    pub fn max_bytes(&self, level: usize) -> u64 {
        crate::layout::level_budget(self.base_bytes, self.multiplier, level)
    }
}

/// A file whose seek allowance reads have used up (the layout keeps the charges; the picker
/// only reads them).
pub use crate::layout::seeks::SeekDue;

/// What the layout remembers between picks, as plain data: the picker stays a pure
/// function of the version, the running plans and this.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PickMemory {
    /// Files due for compaction by seeks, in the order they became due.
    pub seek_due: Vec<SeekDue>,
    /// By level: the largest user key of the level's last compaction (LevelDB's compact
    /// pointer); with `round_robin` the level's next compaction starts after it. A missing
    /// or empty entry: the start of the key space.
    pub pointers: Vec<Vec<u8>>,
}

/// The score of every level but the last (the last level has no limit). Files that a running
/// compaction reads are not counted (RocksDB does the same): they are already on their way
/// down, and counting them would send a second worker after the same excess.
pub fn scores(v: &Version, cfg: &PickerConfig, running: &PickContext) -> Vec<f64> {
    let last = v.num_levels().saturating_sub(1);
    (0..last)
        .map(|level| {
            let idle = v.level(level).iter().filter(|f| !running.is_busy(f));
            if level == 0 {
                idle.count() as f64 / cfg.level0_trigger.max(1) as f64
            } else {
                idle.map(|f| f.size).sum::<u64>() as f64 / cfg.max_bytes(level) as f64
            }
        })
        .collect()
}

/// The next compaction, if any level's score is at least 1, that can run next to the
/// `running` ones; else the compaction of the first file of `memory.seek_due` that can.
/// Levels are tried from the highest score down; within a level >= 1 the files are tried
/// from the smallest overlap ratio up (with `round_robin`, in key order from the level's
/// pointer), skipping those that conflict.
///
/// Conflicts (RocksDB's rules): a plan may not read a busy file, nor write a key range that a
/// running plan writes at the same level (so levels >= 1 stay disjoint). Level 0 compacts all
/// its files together, so a level-0 plan never runs next to another one: while any level-0
/// file is busy, level 0 is skipped (a later level-0 plan would otherwise push newer data
/// into level 1 beside the older data still being merged).
pub fn pick(
    v: &Version,
    cfg: &PickerConfig,
    running: &PickContext,
    memory: &PickMemory,
) -> Option<Plan> {
    let mut levels: Vec<(usize, f64)> = scores(v, cfg, running)
        .into_iter()
        .enumerate()
        .filter(|&(_, s)| s >= 1.0)
        .collect();
    // Highest score first; on a tie the shallower level.
    levels.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let by_size = levels.into_iter().find_map(|(level, score)| {
        if level == 0 {
            let reason = format!(
                "L0 has {} files (trigger {})",
                v.level(0).len(),
                cfg.level0_trigger
            );
            return plan_level0(v, cfg, running, reason);
        }
        let mut candidates: Vec<(u64, u64, &Arc<FileMeta>)> = v
            .level(level)
            .iter()
            .filter(|f| !running.is_busy(f))
            .map(|f| {
                let overlap = overlap_bytes(v, level + 1, f);
                // overlap per byte of the file, scaled to stay in integers
                (overlap.saturating_mul(1024) / f.size.max(1), f.number, f)
            })
            .collect();
        if cfg.round_robin {
            // The files after the pointer, then (wrapping around) the others; each group
            // in key order.
            let pointer = memory.pointers.get(level).map_or(&[][..], Vec::as_slice);
            candidates.sort_by(|a, b| {
                let key = |f: &Arc<FileMeta>| {
                    (
                        !pointer.is_empty() && f.largest_user_key() <= pointer,
                        f.smallest_user_key().to_vec(),
                    )
                };
                key(a.2).cmp(&key(b.2))
            });
        } else {
            candidates.sort_by_key(|&(ratio, number, _)| (ratio, number));
        }
        candidates.into_iter().find_map(|(_, _, f)| {
            plan_file(
                v,
                cfg,
                running,
                level,
                f,
                format!("L{level} score {score:.2}"),
            )
        })
    });
    if by_size.is_some() {
        return by_size;
    }
    // LevelDB prefers compactions for size over those for seeks.
    let last = v.num_levels().saturating_sub(1);
    memory.seek_due.iter().find_map(|&(level, number)| {
        if level >= last {
            return None;
        }
        let f = v.level(level).iter().find(|f| f.number == number)?;
        if running.is_busy(f) {
            return None;
        }
        let reason = format!("seeks used up the allowance of L{level} file {number}");
        if level == 0 {
            plan_level0(v, cfg, running, reason)
        } else {
            plan_file(v, cfg, running, level, f, reason)
        }
    })
}

/// Bytes of the files of `level` whose range meets `f`'s.
fn overlap_bytes(v: &Version, level: usize, f: &FileMeta) -> u64 {
    v.overlapping(
        level,
        Some(f.smallest_user_key()),
        Some(f.largest_user_key()),
    )
    .iter()
    .map(|g| g.size)
    .sum()
}

/// Compact all of level 0 into level 1 (a move when the files overlap neither each other
/// nor level 1, nor too much of level 2), if it can run beside the `running` plans.
fn plan_level0(
    v: &Version,
    cfg: &PickerConfig,
    running: &PickContext,
    reason: String,
) -> Option<Plan> {
    if v.level(0).iter().any(|f| running.is_busy(f)) {
        return None;
    }
    let l0: Vec<Arc<FileMeta>> = v.level(0).to_vec();
    let (lo, hi) = user_range(&l0);
    let l1 = v.overlapping(1, Some(&lo), Some(&hi));
    let kind = if l1.is_empty() && disjoint(&l0) && fits_above_grandparents(v, cfg, 2, &l0) {
        PlanKind::Move
    } else {
        PlanKind::Merge
    };
    let plan = Plan {
        kind,
        inputs: vec![(0, l0), (1, l1)],
        output_level: 1,
        reason,
    };
    running.allows(&plan).then_some(plan)
}

/// Whether no two of `files` share a user key.
fn disjoint(files: &[Arc<FileMeta>]) -> bool {
    let mut sorted: Vec<&Arc<FileMeta>> = files.iter().collect();
    sorted.sort_by(|a, b| a.smallest_user_key().cmp(b.smallest_user_key()));
    sorted
        .windows(2)
        .all(|w| w[0].largest_user_key() < w[1].smallest_user_key())
}

/// Whether each of `files`, moved unchanged to the level above `grandparent`, overlaps at
/// most `max_grandparent_overlap` bytes of `grandparent`.
fn fits_above_grandparents(
    v: &Version,
    cfg: &PickerConfig,
    grandparent: usize,
    files: &[Arc<FileMeta>],
) -> bool {
    cfg.max_grandparent_overlap == u64::MAX
        || files
            .iter()
            .all(|f| overlap_bytes(v, grandparent, f) <= cfg.max_grandparent_overlap)
}

/// Compact file `f` of `level >= 1` into the next level, if a plan for it can run beside
/// the `running` ones: a move when nothing overlaps below and the file's range holds little
/// enough of the level below that; else a merge with the next level's overlapping files,
/// taking in the other files of `level` within their range when that adds no file of the
/// next level and stays under `expanded_compaction_bytes` (LevelDB's `SetupOtherInputs`).
fn plan_file(
    v: &Version,
    cfg: &PickerConfig,
    running: &PickContext,
    level: usize,
    f: &Arc<FileMeta>,
    reason: String,
) -> Option<Plan> {
    let below = v.overlapping(
        level + 1,
        Some(f.smallest_user_key()),
        Some(f.largest_user_key()),
    );
    let single = vec![Arc::clone(f)];
    let kind = if below.is_empty() && fits_above_grandparents(v, cfg, level + 2, &single) {
        PlanKind::Move
    } else {
        PlanKind::Merge
    };
    let plan = |inputs: Vec<Arc<FileMeta>>, below: Vec<Arc<FileMeta>>| Plan {
        kind,
        inputs: vec![(level, inputs), (level + 1, below)],
        output_level: level + 1,
        reason: reason.clone(),
    };
    if let Some(expanded) = expand(v, cfg, running, level, f, &below) {
        let p = plan(expanded, below.clone());
        if running.allows(&p) {
            return Some(p);
        }
    }
    let p = plan(single, below);
    running.allows(&p).then_some(p)
}

/// The files of `level` (>= 1) within the range of `f` and the next level's files `below`
/// that it is merged with, when they are more than `f`, none is busy, together with `below`
/// they stay under `expanded_compaction_bytes`, and their range takes in no more files of
/// the next level than `below`.
fn expand(
    v: &Version,
    cfg: &PickerConfig,
    running: &PickContext,
    level: usize,
    f: &Arc<FileMeta>,
    below: &[Arc<FileMeta>],
) -> Option<Vec<Arc<FileMeta>>> {
    if below.is_empty() {
        return None;
    }
    let mut all = below.to_vec();
    all.push(Arc::clone(f));
    let (lo, hi) = user_range(&all);
    let expanded = v.overlapping(level, Some(&lo), Some(&hi));
    if expanded.len() <= 1 || expanded.iter().any(|g| running.is_busy(g)) {
        return None;
    }
    let bytes: u64 = expanded.iter().chain(below).map(|g| g.size).sum();
    if bytes >= cfg.expanded_compaction_bytes {
        return None;
    }
    let (lo, hi) = user_range(&expanded);
    let again = v.overlapping(level + 1, Some(&lo), Some(&hi));
    (again.len() == below.len()).then_some(expanded)
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
    let inputs = crate::layout::manual_inputs(v, level, begin, end)?;
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
    use crate::layout::BusyRange;
    use crate::version::text;

    fn cfg() -> PickerConfig {
        PickerConfig {
            level0_trigger: 4,
            base_bytes: 10 << 20,
            multiplier: 10,
            max_grandparent_overlap: u64::MAX,
            expanded_compaction_bytes: 50 << 20,
            round_robin: false,
        }
    }

    /// Run the picker on a described tree and print its decision.
    fn run(desc: &str) -> String {
        let v = text::parse(desc).unwrap();
        match pick(&v, &cfg(), &PickContext::idle(), &PickMemory::default()) {
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

    /// Run the picker on a described tree with the given compactions in flight.
    fn run_with(desc: &str, running: &PickContext) -> String {
        let v = text::parse(desc).unwrap();
        match pick(&v, &cfg(), running, &PickMemory::default()) {
            Some(p) => format!("{} because {}", p.describe(), p.reason),
            None => "nothing".to_string(),
        }
    }

    /// A context with `files` busy and running plans writing `ranges` (level, lo, hi).
    fn busy(files: &[u64], ranges: &[(usize, &str, &str)]) -> PickContext {
        PickContext {
            busy_files: files.iter().copied().collect(),
            busy_ranges: ranges
                .iter()
                .map(|&(level, lo, hi)| BusyRange {
                    output_level: level,
                    smallest: lo.as_bytes().to_vec(),
                    largest: hi.as_bytes().to_vec(),
                })
                .collect(),
        }
    }

    const WIDE_L1: &str = "L1: 3:a-f/6M 4:g-k/6M 5:q-s/6M\nL2: 10:a-c/4M 11:d-f/4M 12:m-p/1M";

    #[test]
    fn busy_input_files_are_never_picked() {
        assert_eq!(run(WIDE_L1), "L1[4] -> L2 (move) because L1 score 1.80");
        // File 4 is on its way down: the next worker takes file 5, and the score no longer
        // counts file 4.
        assert_eq!(
            run_with(WIDE_L1, &busy(&[4], &[(2, "g", "k")])),
            "L1[5] -> L2 (move) because L1 score 1.20"
        );
        // A file below the candidate is busy (a running L2 -> L3 compaction reads file 12):
        // file 5 does not overlap it, file 3's partners are free.
        assert_eq!(
            run_with(WIDE_L1, &busy(&[4, 10], &[(2, "g", "k"), (3, "a", "c")])),
            "L1[5] -> L2 (move) because L1 score 1.20"
        );
        assert_eq!(
            run_with(WIDE_L1, &busy(&[4, 5, 10], &[(2, "g", "k"), (2, "q", "s")])),
            "nothing"
        );
    }

    #[test]
    fn output_range_may_not_meet_a_running_output_at_the_same_level() {
        // Something writes L2 over h..r: file 4 (g-k) and file 5 (q-s) would overlap it.
        let running = busy(&[], &[(2, "h", "r")]);
        assert_eq!(
            run_with(WIDE_L1, &running),
            "L1[3]+L2[10,11] -> L2 (merge) because L1 score 1.80"
        );
        // The same range at another level is no conflict.
        assert_eq!(
            run_with(WIDE_L1, &busy(&[], &[(3, "a", "z")])),
            "L1[4] -> L2 (move) because L1 score 1.80"
        );
        // Ranges are inclusive: touching at one key conflicts.
        assert_eq!(
            run_with(WIDE_L1, &busy(&[], &[(2, "f", "g"), (2, "s", "s")])),
            "nothing"
        );
    }

    #[test]
    fn level0_plans_never_run_side_by_side() {
        // Files 1 and 2 are being merged into L1; 3..6 were flushed since. Four idle files
        // reach the trigger, but level 0 waits for the running plan.
        let tree = "L0: 1:a-c 2:b-d 3:a-b 4:c-d 5:a-d 6:b-c\nL1: 7:a-d/5M";
        assert_eq!(
            run_with(tree, &busy(&[1, 2, 7], &[(1, "a", "d")])),
            "nothing"
        );
        assert_eq!(
            run(tree),
            "L0[6,5,4,3,2,1]+L1[7] -> L1 (merge) because L0 has 6 files (trigger 4)"
        );
    }

    #[test]
    fn a_deep_compaction_does_not_block_level0() {
        let tree =
            "L0: 1:a-c 2:b-d 3:a-b 4:c-d\nL1: 7:a-d/5M\nL2: 8:a-m/50M 9:n-z/60M\nL3: 20:a-z/1G";
        // L2 (score 1.1) beats L0 (1.0); while L2's plan runs, level 0 goes beside it.
        assert_eq!(
            run(tree),
            "L2[9]+L3[20] -> L3 (merge) because L2 score 1.10"
        );
        let running = busy(&[9, 20], &[(3, "a", "z")]);
        assert_eq!(
            run_with(tree, &running),
            "L0[4,3,2,1]+L1[7] -> L1 (merge) because L0 has 4 files (trigger 4)"
        );
        // But an L1 file in level 0's range being compacted into L2 blocks it.
        let running = busy(&[7], &[(2, "a", "d")]);
        assert_eq!(
            run_with(tree, &running),
            "L2[9]+L3[20] -> L3 (merge) because L2 score 1.10"
        );
    }

    #[test]
    fn repeated_picks_give_pairwise_compatible_plans() {
        let tree = "L0: 1:a-c 2:b-d 3:a-b 4:c-d\nL1: 30:e-f/4M 31:g-h/4M 32:i-j/4M 33:k-l/4M\n\
                    L2: 40:e-e/1M 41:h-i/1M 42:x-y/100M";
        let v = text::parse(tree).unwrap();
        let mut plans: Vec<Plan> = Vec::new();
        while let Some(p) = pick(
            &v,
            &cfg(),
            &PickContext::of_plans(&plans),
            &PickMemory::default(),
        ) {
            assert!(plans.len() < 20, "picker repeats itself: {}", p.describe());
            plans.push(p);
        }
        let described: Vec<String> = plans.iter().map(Plan::describe).collect();
        assert_eq!(
            described,
            [
                // L1 scores 1.6, then 1.2 without file 33, then 0.8.
                "L1[33] -> L2 (move)",
                "L1[30]+L2[40] -> L2 (merge)",
                // L2 (1.01 without the busy file 40) beats L0 (1.0); then they tie and the
                // shallower level goes first. Files 31 and 32 stay: L1 is under its limit.
                "L2[41] -> L3 (move)",
                "L0[4,3,2,1] -> L1 (merge)",
                "L2[42] -> L3 (move)",
            ]
        );
        for (i, a) in plans.iter().enumerate() {
            for b in &plans[i + 1..] {
                assert!(PickContext::of_plans([a]).allows(b), "{a:?} vs {b:?}");
            }
        }
    }

    /// Random trees and random completion orders: plans picked beside running ones, each
    /// committed (as the engine does) to whatever version is current when it finishes,
    /// with one output spanning its whole input range (the widest it can write), beside
    /// random flushes into level 0. Every edit must still apply (its inputs present) and
    /// levels >= 1 must stay disjoint.
    #[test]
    fn concurrent_plans_commit_in_any_order_and_keep_levels_disjoint() {
        use crate::iter::testutil::Rng;
        use crate::manifest::VersionEdit;
        let key = |i: u64| format!("k{i:03}");
        let mut rng = Rng::new(7);
        for round in 0..300 {
            // Disjoint files in levels 1..=3 (file sizes put some levels over their limit),
            // a few overlapping ones in level 0.
            let mut desc = String::new();
            let mut number = 1;
            for level in 1..=4u64 {
                desc.push_str(&format!("L{level}:"));
                let mut at = rng.below(20);
                while at < 990 {
                    let hi = at + rng.below(8 * level);
                    let mb = 1 + rng.below(3 * 10u64.pow(level as u32 - 1));
                    desc.push_str(&format!(" {number}:{}-{}/{mb}M", key(at), key(hi.min(999))));
                    number += 1;
                    at = hi + 1 + rng.below(10 * level);
                }
                desc.push('\n');
            }
            let mut v = text::parse(&desc).unwrap();
            let mut number = 10_000 + number;
            let mut running: Vec<Plan> = Vec::new();
            for step in 0..60 {
                let ctx = PickContext::of_plans(&running);
                match rng.below(4) {
                    // Pick one more plan beside the running ones.
                    0 | 1 if running.len() < 3 => {
                        if let Some(p) = pick(&v, &cfg(), &ctx, &PickMemory::default()) {
                            assert!(ctx.allows(&p), "round {round} step {step}: {p:?}");
                            running.push(p);
                        }
                    }
                    // A flush: a new level-0 file with the newest data.
                    2 => {
                        let lo = rng.below(1000);
                        let hi = (lo + rng.below(300)).min(999);
                        let mut edit = VersionEdit::default();
                        edit.new_files
                            .push((0, text::file(number, &key(lo), &key(hi), 1 << 20)));
                        number += 1;
                        v = v.apply(&edit).unwrap();
                    }
                    // A running plan (any of them) commits.
                    _ if !running.is_empty() => {
                        let i = rng.below(running.len() as u64) as usize;
                        let p = running.remove(i);
                        let mut edit = VersionEdit::default();
                        for (level, f) in p.input_files() {
                            edit.deleted_files.push((level as u32, f.number));
                        }
                        let (lo, hi) = p.user_range().unwrap();
                        let (lo, hi) = (
                            String::from_utf8(lo).unwrap(),
                            String::from_utf8(hi).unwrap(),
                        );
                        let out = text::file(number, &lo, &hi, p.input_bytes().max(1));
                        number += 1;
                        edit.new_files.push((p.output_level as u32, out));
                        v = v.apply(&edit).unwrap_or_else(|e| {
                            panic!(
                                "round {round} step {step}: {} no longer applies: {e}",
                                p.describe()
                            )
                        });
                    }
                    _ => {}
                }
                for level in 1..v.num_levels() {
                    for pair in v.level(level).windows(2) {
                        assert!(
                            pair[0].largest_user_key() < pair[1].smallest_user_key(),
                            "round {round} step {step}: L{level} files {} and {} overlap",
                            pair[0].number,
                            pair[1].number
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn disjoint_level0_files_over_an_empty_range_of_level1_move() {
        // A sequential load: the flushed files overlap neither each other nor level 1.
        assert_eq!(
            run("L0: 1:a-b 2:c-d 3:e-f 4:g-h\nL1: 5:x-z"),
            "L0[4,3,2,1] -> L1 (move) because L0 has 4 files (trigger 4)"
        );
        assert_eq!(
            run("L0: 1:a-b 2:c-d 3:e-f 4:g-h\nL1: 5:h-z"),
            "L0[4,3,2,1]+L1[5] -> L1 (merge) because L0 has 4 files (trigger 4)"
        );
        assert_eq!(
            run("L0: 1:a-b 2:b-d 3:e-f 4:g-h\nL1: 5:x-z"),
            "L0[4,3,2,1] -> L1 (merge) because L0 has 4 files (trigger 4)"
        );
        // Too much of level 2 below one of them: merged, so the merge cuts it.
        let v = text::parse("L0: 1:a-b 2:c-d 3:e-f 4:g-h\nL2: 9:c-d/30M").unwrap();
        let limited = PickerConfig {
            max_grandparent_overlap: 20 << 20,
            ..cfg()
        };
        let p = pick(&v, &limited, &PickContext::idle(), &PickMemory::default()).unwrap();
        assert_eq!(p.describe(), "L0[4,3,2,1] -> L1 (merge)");
        let p = pick(&v, &cfg(), &PickContext::idle(), &PickMemory::default()).unwrap();
        assert_eq!(p.describe(), "L0[4,3,2,1] -> L1 (move)");
    }

    #[test]
    fn a_compaction_takes_in_files_of_its_level_within_the_range_it_rewrites_below() {
        // File 3 (ratio 1) is picked; its partner 10 spans a-f, which also holds file 4.
        let tree = "L1: 3:a-c/4M 4:d-f/4M 5:g-h/4M\nL2: 10:a-f/4M 11:g-h/40M";
        assert_eq!(
            run(tree),
            "L1[3,4]+L2[10] -> L2 (merge) because L1 score 1.20"
        );
        // Not when the wider range would take in another file below ...
        let tree = "L1: 3:a-c/4M 4:d-g/4M 5:h-i/4M\nL2: 10:a-f/4M 11:g-h/40M";
        assert_eq!(
            run(tree),
            "L1[3]+L2[10] -> L2 (merge) because L1 score 1.20"
        );
        // ... nor past the byte limit (50M here: 4 + 8 + 40) ...
        let tree = "L1: 3:a-c/4M 4:d-f/8M\nL2: 10:a-f/40M";
        assert_eq!(
            run(tree),
            "L1[4]+L2[10] -> L2 (merge) because L1 score 1.20"
        );
        // ... nor with a busy file.
        let tree = "L1: 3:a-c/4M 4:d-f/4M 5:g-h/8M\nL2: 10:a-f/4M 11:g-h/80M";
        assert_eq!(
            run_with(tree, &busy(&[4], &[(3, "d", "f")])),
            "L1[3]+L2[10] -> L2 (merge) because L1 score 1.20"
        );
    }

    #[test]
    fn files_due_for_seeks_are_compacted_when_no_level_is_over_its_limit() {
        let tree = "L0: 1:a-z\nL1: 3:a-c/1M 4:d-f/1M\nL2: 10:a-b/1M 11:x-z/1M\nL6: 20:a-z/1M";
        let v = text::parse(tree).unwrap();
        let idle = PickContext::idle();
        let describe = |due: &[SeekDue]| {
            let memory = PickMemory {
                seek_due: due.to_vec(),
                ..PickMemory::default()
            };
            pick(&v, &cfg(), &idle, &memory)
                .map(|p| format!("{} because {}", p.describe(), p.reason))
        };
        assert_eq!(describe(&[]), None);
        assert_eq!(
            describe(&[(1, 4)]),
            Some("L1[4] -> L2 (move) because seeks used up the allowance of L1 file 4".into())
        );
        assert_eq!(
            describe(&[(1, 3)]),
            Some(
                "L1[3]+L2[10] -> L2 (merge) because seeks used up the allowance of L1 file 3"
                    .into()
            )
        );
        assert_eq!(
            describe(&[(0, 1)]),
            Some(
                "L0[1]+L1[3,4] -> L1 (merge) because seeks used up the allowance of L0 file 1"
                    .into()
            )
        );
        // Files no longer where they were charged, and files of the last level, are passed
        // over for the next.
        assert_eq!(
            describe(&[(2, 3), (6, 20), (1, 99), (1, 4)]),
            Some("L1[4] -> L2 (move) because seeks used up the allowance of L1 file 4".into())
        );
        // Busy files wait.
        let memory = PickMemory {
            seek_due: vec![(1, 4)],
            ..PickMemory::default()
        };
        assert_eq!(pick(&v, &cfg(), &busy(&[4], &[]), &memory), None);
    }

    #[test]
    fn round_robin_takes_the_files_after_the_pointer_and_wraps_around() {
        let rr = PickerConfig {
            round_robin: true,
            ..cfg()
        };
        // Least overlap would take file 5 (nothing below it).
        let v = text::parse("L1: 3:a-c/6M 4:d-f/6M 5:g-h/6M\nL2: 10:a-c/4M 11:d-f/4M").unwrap();
        let at = |pointer: &str, running: &PickContext| {
            let memory = PickMemory {
                pointers: vec![Vec::new(), pointer.as_bytes().to_vec()],
                ..PickMemory::default()
            };
            pick(&v, &rr, running, &memory).map(|p| p.describe())
        };
        let idle = PickContext::idle();
        assert_eq!(at("", &idle).as_deref(), Some("L1[3]+L2[10] -> L2 (merge)"));
        assert_eq!(
            at("c", &idle).as_deref(),
            Some("L1[4]+L2[11] -> L2 (merge)")
        );
        assert_eq!(
            at("e", &idle).as_deref(),
            Some("L1[4]+L2[11] -> L2 (merge)")
        );
        assert_eq!(at("f", &idle).as_deref(), Some("L1[5] -> L2 (move)"));
        assert_eq!(
            at("h", &idle).as_deref(),
            Some("L1[3]+L2[10] -> L2 (merge)")
        );
        // A busy file is passed over for the next one.
        assert_eq!(
            at("c", &busy(&[4], &[(3, "x", "y")])).as_deref(),
            Some("L1[5] -> L2 (move)")
        );
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
