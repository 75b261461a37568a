//! Picker tests from text descriptions of guarded trees (see `version::text`: `G<n>:` lines
//! set guard keys).

use std::collections::HashSet;

use super::picker::{Busy, PickerConfig, closure, pick, pick_range};
use super::state::{GuardState, Guarded, NEW_GUARD, guard_record};
use crate::options::FlsmPolicy;
use crate::version::{Version, text};

/// A guarded tree from its text description (`G<n>:` lines are guards).
fn parse(desc: &str) -> Result<Version, String> {
    text::parse_with(desc, std::sync::Arc::new(GuardState::default()), &|l, k| {
        guard_record(NEW_GUARD, l, k)
    })
}

fn cfg() -> PickerConfig {
    PickerConfig {
        level0_trigger: 4,
        base_bytes: 10 << 20,
        multiplier: 10,
        max_files_per_guard: 2,
        rewrite_ratio: 25,
        aggressive_ratio_percent: 0,
        // The tests below this one were written for the tiered policy; the paper's have
        // their own section (`paper_*`).
        policy: FlsmPolicy::Tiered,
    }
}

fn run_with(desc: &str, busy: &Busy, hot: &[(usize, usize)]) -> String {
    let v = parse(desc).unwrap();
    match pick(&v, &cfg(), busy, hot) {
        Some(p) => format!("{} because {}", p.describe(), p.reason),
        None => "nothing".to_string(),
    }
}

fn run(desc: &str) -> String {
    run_with(desc, &Busy::default(), &[])
}

#[test]
fn nothing_below_the_triggers() {
    assert_eq!(run(""), "nothing");
    assert_eq!(
        run("G1: m\nL0: 1:a-z 2:a-z 3:a-z\nL1: 4:a-c 5:b-d 6:m-p 7:n-z"),
        "nothing"
    );
}

#[test]
fn level0_goes_to_level1_whole_without_level1_inputs() {
    // FLSM appends to level 1: its tables are not inputs.
    assert_eq!(
        run("G1: m\nL0: 1:c-e 2:d-f 3:e-g 4:c-d\nL1: 5:a-b 6:m-z"),
        "L0[4,3,2,1] -> L1 (merge) because L0 has 4 files (trigger 4)"
    );
}

#[test]
fn overflowing_guard_merges_in_place() {
    // The sentinel holds 3 tables (max 2); the guard at m holds 2.
    assert_eq!(
        run("G1: m\nL1: 1:a-c 2:b-d 3:a-b 4:n-p 5:m-q"),
        "L1[3,2,1] -> L1 (merge) because L1 guard 0 holds 3 tables (max 2)"
    );
    // The last level rewrites in place too.
    assert_eq!(
        run("G6: m\nL6: 1:m-n 2:m-o 3:n-p"),
        "L6[3,2,1] -> L6 (merge) because L6 guard 1 holds 3 tables (max 2)"
    );
}

#[test]
fn an_overflow_merge_takes_the_newest_tables_while_each_older_is_at_most_half_of_them() {
    // A 40K table and two new 1K fragments: the fragments merge, the 40K table stays.
    assert_eq!(
        run("G1: m\nL1: 1:a-c/40K 2:b-d/1K 3:a-b/1K"),
        "L1[3,2] -> L1 (merge) because L1 guard 0 holds 3 tables (max 2); its newest 2 merged"
    );
    // Each older table joins while it is at most half the bytes taken so far: 1K + 1K, then
    // 1K (2K taken), 1K (3K), 2K (4K), 3K (6K); 13K is more than half the 9K taken.
    assert_eq!(
        run("G1: m\nL1: 1:a-c/13K 2:a-c/3K 3:a-c/2K 4:a-c/1K 5:a-c/1K 6:a-c/1K 7:a-c/1K"),
        "L1[7,6,5,4,3,2] -> L1 (merge) because L1 guard 0 holds 7 tables (max 2); its newest 6 merged"
    );
    // ... and 2K after 1K + 1K is more than half.
    assert_eq!(
        run("G1: m\nL1: 1:a-c/2K 2:a-c/1K 3:a-c/1K"),
        "L1[3,2] -> L1 (merge) because L1 guard 0 holds 3 tables (max 2); its newest 2 merged"
    );
    // Age is the largest sequence number, not the table number.
    assert_eq!(
        run("G1: m\nL1: 1:a-c/1K@900-999 2:b-d/40K@100-199 3:a-b/1K@300-399"),
        "L1[1,3] -> L1 (merge) because L1 guard 0 holds 3 tables (max 2); its newest 2 merged"
    );
    // A large table reaching into the next guard stays too (a push down would take its
    // whole reach; a merge in place need not).
    assert_eq!(
        run("G1: m\nL1: 1:a-p/40K 2:b-d/1K 3:a-b/1K"),
        "L1[3,2] -> L1 (merge) because L1 guard 0 holds 3 tables (max 2); its newest 2 merged"
    );
    // Once the newer tables are twice as large, it is merged with them and cut at the guard.
    assert_eq!(
        run("G1: m\nL1: 1:a-p/2K 2:b-d/2K 3:a-b/2K 4:n-o/1K"),
        "L1[3,2,1] -> L1 (merge) because L1 guard 0 holds 3 tables (max 2)"
    );
}

#[test]
fn level_over_budget_pushes_its_fullest_guard_down() {
    // L1 holds 12M over a 10M budget; the guard at m holds 8M: it goes down, appended.
    assert_eq!(
        run("G1: m\nG2: g m t\nL1: 1:a-c/4M 2:m-p/4M 3:n-z/4M\nL2: 9:m-n/50M"),
        "L1[3,2] -> L2 (merge) because L1 score 1.20, guard 1 holds 8388608 bytes"
    );
}

#[test]
fn one_table_inside_one_child_guard_moves() {
    assert_eq!(
        run("G1: m\nG2: g m t\nL1: 1:a-c/6M 2:n-p/5M"),
        "L1[1] -> L2 (move) because L1 score 1.10, guard 0 holds 6291456 bytes"
    );
    // ... but a table spanning two child guards is rewritten (cut at g).
    assert_eq!(
        run("G1: m\nG2: c m t\nL1: 1:a-e/6M 2:n-p/5M"),
        "L1[1] -> L2 (merge) because L1 score 1.10, guard 0 holds 6291456 bytes"
    );
}

#[test]
fn a_push_takes_the_tables_a_guard_reaches_but_a_merge_in_place_need_not() {
    // Table 1 was written before guard m was committed: it spans both ranges, so compacting
    // either range takes both (moving half of its range down would put newer data below
    // older data).
    let v = parse("G1: m t\nL1: 1:a-p 2:n-o 3:b-c 4:u-z").unwrap();
    let nums = |fs: Vec<std::sync::Arc<crate::version::FileMeta>>| {
        let mut n: Vec<u64> = fs.iter().map(|f| f.number).collect();
        n.sort_unstable();
        n
    };
    assert_eq!(nums(closure(&v, 1, 1, 1)), vec![1, 2, 3]);
    assert_eq!(nums(closure(&v, 1, 0, 0)), vec![1, 2, 3]);
    assert_eq!(nums(closure(&v, 1, 2, 2)), vec![4]);
    assert_eq!(run("G1: m t\nL1: 1:a-p 2:n-o 3:b-c 4:u-z"), "nothing");
    // The guard at m overflows (1, 2, 5): a merge in place takes its tables, table 1 with
    // its reach into the sentinel's range (cut at m on the way out), and not the sentinel's
    // table 3.
    assert_eq!(
        run("G1: m t\nL1: 1:a-p 2:n-o 3:b-c 4:u-z 5:m-n"),
        "L1[5,2,1] -> L1 (merge) because L1 guard 1 holds 3 tables (max 2)"
    );
}

#[test]
fn busy_tables_and_ranges_are_left_alone() {
    let desc = "G1: m\nG2: g m t\nL1: 1:a-c/4M 2:m-p/4M 3:n-z/4M\nL2: 9:m-n/50M";
    let busy = Busy {
        files: HashSet::from([3]),
        writing: Vec::new(),
    };
    // The fullest guard holds a busy table: the next one goes.
    assert_eq!(
        run_with(desc, &busy, &[]),
        "L1[1] -> L2 (move) because L1 score 1.20, guard 0 holds 4194304 bytes"
    );
    // Another compaction writes into L2 over a..c: nothing can go.
    let busy = Busy {
        files: HashSet::from([3]),
        writing: vec![(2, b"a".to_vec(), b"b".to_vec())],
    };
    assert_eq!(run_with(desc, &busy, &[]), "nothing");
    // Level 0 waits while one of its files is being compacted.
    let busy = Busy {
        files: HashSet::from([1]),
        writing: Vec::new(),
    };
    assert_eq!(
        run_with("L0: 1:a-b 2:a-b 3:a-b 4:a-b", &busy, &[]),
        "nothing"
    );
}

#[test]
fn the_25x_rule_rewrites_the_second_to_last_level_in_place() {
    // L5 is over budget (100G); its guard at m would push 2M into a last-level guard that is
    // full (2 tables) and holds 100M: more than 25x, so L5 rewrites the guard itself.
    let tree = "G5: m\nG6: m\nL5: 1:a-c/200G 2:m-n/1M 3:m-o/1M\nL6: 8:m-p/50M 9:m-q/50M";
    let v = parse(tree).unwrap();
    // the fullest guard is the sentinel (one table): pushed
    let p = pick(&v, &cfg(), &Busy::default(), &[]).unwrap();
    assert_eq!(p.describe(), "L5[1] -> L6 (move)");
    let busy = Busy {
        files: HashSet::from([1]),
        writing: Vec::new(),
    };
    assert_eq!(
        run_with(tree, &busy, &[]),
        "L5[3,2] -> L5 (merge) because L5 score 2.05, guard 1 holds 2097152 bytes; rewritten in place (25x rule: 104857600 bytes below)"
    );
    // With small last-level guards the push goes ahead.
    let tree = "G5: m\nG6: m\nL5: 1:a-c/200G 2:m-n/1M 3:m-o/1M\nL6: 8:m-p/1M 9:m-q/1M";
    assert_eq!(
        run_with(tree, &busy, &[]),
        "L5[3,2] -> L6 (merge) because L5 score 2.05, guard 1 holds 2097152 bytes"
    );
}

#[test]
fn hot_guards_merge_in_place_when_nothing_else_is_due() {
    let tree = "G2: m\nL2: 1:a-c 2:b-d 3:m-n";
    assert_eq!(run(tree), "nothing");
    assert_eq!(
        run_with(tree, &Busy::default(), &[(2, 0)]),
        "L2[2,1] -> L2 (merge) because seeks keep landing on L2 guard 0 (2 tables)"
    );
    // A guard with one table gains nothing.
    assert_eq!(run_with(tree, &Busy::default(), &[(2, 1)]), "nothing");
}

#[test]
fn manual_range_pushes_the_guards_it_touches() {
    let v = parse("G1: m t\nL0: 9:a-z\nL1: 1:a-c 2:n-o 3:u-z\nL2: 4:a-z").unwrap();
    let p = pick_range(&v, 1, Some(b"n"), Some(b"p")).unwrap();
    assert_eq!(p.describe(), "L1[2] -> L2 (merge)");
    let p = pick_range(&v, 1, None, None).unwrap();
    assert_eq!(p.describe(), "L1[1,2,3] -> L2 (merge)");
    assert_eq!(
        pick_range(&v, 0, None, None).unwrap().describe(),
        "L0[9] -> L1 (merge)"
    );
    assert!(pick_range(&v, 1, Some(b"d"), Some(b"e")).is_none());
    assert!(pick_range(&v, 6, None, None).is_none());
}

/// The preset with small guards, under the tiered policy (the tests using it were written
/// for it; `paper_flsm_options` is the preset's own policy).
fn flsm_options() -> crate::Options {
    let mut o = paper_flsm_options();
    o.flsm.policy = FlsmPolicy::Tiered;
    o
}

fn paper_flsm_options() -> crate::Options {
    let mut o = crate::Options::preset("pebblesdb").unwrap();
    assert_eq!(o.flsm.policy, FlsmPolicy::Paper, "the preset's policy");
    o.flsm.max_sstables_per_guard = 2;
    o.flsm.seek_compaction_trigger = 3;
    o
}

#[test]
fn seeks_into_a_guard_of_several_tables_make_it_hot() {
    use crate::layout::Layout;
    let layout = super::Flsm::new(&flsm_options());
    // Small tables: the seek budget is the trigger (3), not bytes / 16 KiB.
    let v = parse("G1: m\nL1: 1:a-c/1K 2:b-d/1K 3:m-n/1K").unwrap();
    assert!(
        layout
            .pick(&v, &crate::layout::PickContext::idle())
            .is_none()
    );
    // A guard with one table is never charged.
    for _ in 0..5 {
        assert!(!layout.note_seek(&v, b"n"));
    }
    assert!(!layout.note_seek(&v, b"a"));
    assert!(!layout.note_seek(&v, b"b"));
    assert!(layout.note_seek(&v, b"c"), "third seek into guard 0");
    assert!(!layout.note_seek(&v, b"c"), "wanted once");
    let p = layout
        .pick(&v, &crate::layout::PickContext::idle())
        .unwrap();
    assert_eq!(
        format!("{} because {}", p.describe(), p.reason),
        "L1[2,1] -> L1 (merge) because seeks keep landing on L1 guard 0 (2 tables)"
    );
    // Once picked, the guard is not hot any more.
    assert!(
        layout
            .pick(&v, &crate::layout::PickContext::idle())
            .is_none()
    );
    // Its tables did not change (the merge never ran): seeks that keep coming make it hot
    // again, once the budget counted from its last listing (seeks 4-6) is spent.
    assert_eq!((0..4).position(|_| layout.note_seek(&v, b"c")), Some(1));
    assert!(
        layout
            .pick(&v, &crate::layout::PickContext::idle())
            .is_some()
    );
    // Big guards absorb more seeks: 2 MiB / 16 KiB = 128 for one extra table, half that
    // for two.
    let layout = super::Flsm::new(&flsm_options());
    let v = parse("G1: m\nL1: 1:a-c/1M 2:b-d/1M").unwrap();
    assert!((0..127).all(|_| !layout.note_seek(&v, b"a")));
    assert!(layout.note_seek(&v, b"a"));
    assert!(
        layout
            .pick(&v, &crate::layout::PickContext::idle())
            .is_some()
    );
    let v = parse("G1: m\nL1: 1:a-c/1M 2:b-d/1M 3:b-d/1M").unwrap();
    assert!((0..95).all(|_| !layout.note_seek(&v, b"a")));
    assert!(layout.note_seek(&v, b"a"));
}

#[test]
fn empty_guards_are_deleted_at_every_level_that_has_them() {
    use crate::layout::Plan;
    use crate::manifest::VersionEdit;
    let plan_of = |v: &crate::version::Version, level: usize, nums: &[u64]| Plan {
        kind: crate::layout::PlanKind::Merge,
        inputs: vec![(
            level,
            v.level(level)
                .iter()
                .filter(|f| nums.contains(&f.number))
                .cloned()
                .collect(),
        )],
        output_level: level,
        reason: String::new(),
    };
    let drop_all = |nums: &[u64], level: u32| VersionEdit {
        deleted_files: nums.iter().map(|&n| (level, n)).collect(),
        ..VersionEdit::default()
    };
    // Everything in [m, t) at L1 was deleted (tombstones met their keys and were dropped).
    let v = parse("G1: m t\nG2: m t\nL1: 1:a-b 2:m-n 3:m-p 4:t-z").unwrap();
    let got = super::empty_guards(&v, &plan_of(&v, 1, &[2, 3]), &drop_all(&[2, 3], 1));
    assert_eq!(got, vec![(1, b"m".to_vec()), (2, b"m".to_vec())]);
    // Data below keeps the guard (a push down empties the upper range but not the lower).
    let v = parse("G1: m t\nG2: m t\nL1: 2:m-n 3:m-p\nL2: 9:m-o").unwrap();
    let got = super::empty_guards(&v, &plan_of(&v, 1, &[2, 3]), &drop_all(&[2, 3], 1));
    assert!(got.is_empty());
    // The edit applied removes the guard and the tree still nests.
    let v = parse("G1: m t\nG2: m t\nL1: 1:a-b 2:m-n 3:m-p 4:t-z").unwrap();
    let mut e = drop_all(&[2, 3], 1);
    for (l, k) in super::empty_guards(&v, &plan_of(&v, 1, &[2, 3]), &e) {
        e.records
            .push(guard_record(super::state::DELETED_GUARD, l, &k));
    }
    let after = v.apply(&e).unwrap();
    assert_eq!(after.guards(1), [b"t".to_vec()]);
    assert_eq!(after.guards(2), [b"t".to_vec()]);
}

#[test]
fn gets_probing_several_tables_of_a_guard_make_it_hot() {
    use crate::layout::Layout;
    let layout = super::Flsm::new(&flsm_options());
    let v = parse("G1: m\nL1: 1:a-c/1K 2:b-d/1K 3:m-n/1K").unwrap();
    assert!(!layout.take_compaction_wanted());
    // charged as a get that probed both tables of the sentinel
    assert!(!layout.charge(&v, 1, 0, 1));
    assert!(!layout.charge(&v, 1, 0, 1));
    assert!(layout.charge(&v, 1, 0, 1));
    assert_eq!(
        layout
            .pick(&v, &crate::layout::PickContext::idle())
            .map(|p| p.describe()),
        Some("L1[2,1] -> L1 (merge)".to_string())
    );
}

fn run_aggressive(desc: &str, busy: &Busy) -> String {
    let v = parse(desc).unwrap();
    let cfg = PickerConfig {
        aggressive_ratio_percent: 25,
        ..cfg()
    };
    match pick(&v, &cfg, busy, &[]) {
        Some(p) => format!("{} because {}", p.describe(), p.reason),
        None => "nothing".to_string(),
    }
}

#[test]
fn aggressive_rule_pushes_a_level_within_the_ratio_of_the_next() {
    // L1 holds 3M, exactly 25% of L2's 12M: its fullest guard goes down, appended.
    assert_eq!(
        run_aggressive(
            "G1: m\nG2: m\nL1: 1:a-c/1M 2:m-p/1M 3:n-z/1M\nL2: 9:a-k/6M 10:m-z/6M",
            &Busy::default()
        ),
        "L1[3,2] -> L2 (merge) because L1 holds 3145728 bytes, at least 25% of L2's \
         12582912; guard 1 holds 2097152 bytes"
    );
    // Below the ratio (3M of 13M), nothing.
    assert_eq!(
        run_aggressive(
            "G1: m\nG2: m\nL1: 1:a-c/1M 2:m-p/1M 3:n-z/1M\nL2: 9:a-k/6M 10:m-z/7M",
            &Busy::default()
        ),
        "nothing"
    );
    // Disabled (the default test config has ratio 0), nothing.
    assert_eq!(
        run("G1: m\nG2: m\nL1: 1:a-c/1M 2:m-p/1M 3:n-z/1M\nL2: 9:a-k/6M 10:m-z/6M"),
        "nothing"
    );
}

#[test]
fn aggressive_rule_needs_both_levels_non_empty_and_comes_last() {
    // An empty level is never pushed, even when the level below is tiny...
    assert_eq!(
        run_aggressive(
            "G1: m\nG2: m\nL2: 9:a-k/1K\nL3: 10:a-z/1K",
            &Busy::default()
        ),
        "L2[9] -> L3 (move) because L2 holds 1024 bytes, at least 25% of L3's 1024; \
         guard 0 holds 1024 bytes"
    );
    // ... and a level is not pushed into an empty one (no level fewer for seeks).
    assert_eq!(
        run_aggressive("G1: m\nL1: 1:a-c/1M 2:m-p/1M", &Busy::default()),
        "nothing"
    );
    // Every other rule comes first: level 0 over its trigger wins.
    assert_eq!(
        run_aggressive(
            "G1: m\nG2: m\nL0: 5:a-b 6:a-b 7:a-b 8:a-b\nL1: 1:a-c/1M\nL2: 9:a-k/1M",
            &Busy::default()
        ),
        "L0[8,7,6,5] -> L1 (merge) because L0 has 4 files (trigger 4)"
    );
}

#[test]
fn aggressive_rule_skips_busy_guards() {
    let desc = "G1: m\nG2: m\nL1: 1:a-c/1M 2:m-p/1M 3:n-z/1M\nL2: 9:a-k/6M 10:m-z/6M";
    // The fullest guard (m) holds a busy table: the next guard goes instead.
    let busy = Busy {
        files: HashSet::from([2]),
        ..Busy::default()
    };
    assert_eq!(
        run_aggressive(desc, &busy),
        "L1[1] -> L2 (move) because L1 holds 3145728 bytes, at least 25% of L2's \
         12582912; guard 0 holds 1048576 bytes"
    );
    // Both guards blocked (one by a file, one by a range being written in L2): nothing.
    let busy = Busy {
        files: HashSet::from([2]),
        writing: vec![(2, b"a".to_vec(), b"b".to_vec())],
    };
    assert_eq!(run_aggressive(desc, &busy), "nothing");
}

/// A guard of many overlapping tables, merged with sequential and with parallel seeks: every
/// step (seeks forward and backward, walks, injected errors) gives the same answer.
#[test]
fn parallel_seeks_match_sequential_seeks() {
    use crate::iter::merging::MergingIterator;
    use crate::iter::testutil::{FailingIter, Rng, random_internal_entries, split_randomly};
    use crate::iter::{InternalIterator, VecIter};

    /// The outcome of a step and the entry it left the iterator on, as text.
    fn state(it: &MergingIterator, r: &crate::Result<()>) -> String {
        let r = match r {
            Ok(()) => "ok".to_string(),
            Err(e) => format!("error: {e}"),
        };
        if it.valid() {
            format!("{r} at {:?} = {:?}", it.key(), it.value())
        } else {
            format!("{r}, not valid")
        }
    }

    for seed in 0..20u64 {
        let mut rng = Rng::new(seed);
        let all = random_internal_entries(&mut rng, 400);
        let keys: Vec<Vec<u8>> = all.iter().map(|(k, _)| k.clone()).collect();
        let parts = split_randomly(&mut rng, &all, 12);
        // Odd seeds put a child that fails after a few movements in the middle.
        let fail_at = (seed % 2 == 1).then(|| (parts.len() / 2, rng.below(30) as usize));
        let children = || -> Vec<Box<dyn InternalIterator>> {
            parts
                .iter()
                .enumerate()
                .map(|(i, p)| match fail_at {
                    Some((j, budget)) if i == j => {
                        Box::new(FailingIter::new(p.clone(), budget)) as Box<dyn InternalIterator>
                    }
                    _ => Box::new(VecIter::new(p.clone())) as Box<dyn InternalIterator>,
                })
                .collect()
        };
        let mut seq = MergingIterator::new(children());
        let mut par = MergingIterator::new(children()).with_parallel_seeks();
        let mut errors = 0;
        for step in 0..300 {
            let op = rng.below(6);
            let probe = rng.probe_internal_key(&keys);
            let apply = |m: &mut MergingIterator| match op {
                0 | 1 => m.seek(&probe),
                2 => m.seek_for_prev(&probe),
                3 => m.next(),
                4 => m.prev(),
                _ => m.seek_to_first(),
            };
            let (a, b) = (apply(&mut seq), apply(&mut par));
            errors += usize::from(a.is_err());
            assert_eq!(
                state(&seq, &a),
                state(&par, &b),
                "seed {seed}, step {step}, op {op}"
            );
        }
        assert_eq!(fail_at.is_some(), errors > 0, "seed {seed}");
    }
}

#[test]
fn a_hot_guard_stays_hot_when_an_overflow_merges_only_its_newest_tables() {
    use crate::layout::{Layout, PickContext};
    let layout = super::Flsm::new(&flsm_options());
    let v = parse("G1: m\nL1: 1:a-c/40K 2:b-d/1K 3:a-b/1K").unwrap();
    for _ in 0..2 {
        assert!(!layout.note_seek(&v, b"b"));
    }
    assert!(layout.note_seek(&v, b"b"), "guard 0 of L1 is hot");
    // The overflow comes first and merges the two new tables only.
    assert_eq!(
        layout.pick(&v, &PickContext::idle()).map(|p| p.describe()),
        Some("L1[3,2] -> L1 (merge)".to_string())
    );
    // After it the guard holds two tables, within the limit; the seeks that paid for it
    // still get it merged whole.
    let v = parse("G1: m\nL1: 1:a-c/40K 4:a-d/2K@200-399").unwrap();
    assert_eq!(
        layout.pick(&v, &PickContext::idle()).map(|p| format!(
            "{} because {}",
            p.describe(),
            p.reason
        )),
        Some("L1[4,1] -> L1 (merge) because seeks keep landing on L1 guard 0 (2 tables)".into())
    );
    // Merged whole, it is not hot any more.
    assert!(layout.pick(&v, &PickContext::idle()).is_none());
}

#[test]
fn a_hot_guard_that_left_by_a_push_down_is_not_hot_when_it_fills_again() {
    use crate::layout::{Layout, PickContext};
    // Without the aggressive level rule, which would push level 1 into level 2 here.
    let mut o = flsm_options();
    o.flsm.aggressive_ratio_percent = 0;
    let layout = super::Flsm::new(&o);
    let v = parse("G1: m\nL1: 1:a-c/1K 2:b-d/1K 3:m-n/1K").unwrap();
    for _ in 0..2 {
        assert!(!layout.note_seek(&v, b"b"));
    }
    assert!(layout.note_seek(&v, b"b"), "guard 0 of L1 is hot");
    // Before the hot merge runs, the level goes over budget and the guard is pushed down
    // whole (or a cursor on an old version made it hot after it was merged): it holds one
    // table now, so nothing is picked for it.
    let v = parse("G1: m\nL1: 3:m-n/1K\nL2: 4:a-d/2K").unwrap();
    assert!(layout.pick(&v, &PickContext::idle()).is_none());
    // Later two level-0 compactions append two tables to the guard. No seek touched it
    // since: merging it in place now would rewrite it for nothing (FLSM appends).
    let v = parse("G1: m\nL1: 5:a-b/1K 6:a-c/1K 3:m-n/1K\nL2: 4:a-d/2K").unwrap();
    assert_eq!(
        layout.pick(&v, &PickContext::idle()).map(|p| p.describe()),
        None
    );
}

/// From a review: a guard's tables are asked newest first by their largest sequence number,
/// but a table listed later may still hold a newer version of the key than the one found
/// (a table merged from old and new data and pushed into the guard after one whose data is
/// newer overall). The get stops only at a table whose every entry is older than the entry
/// found.
#[test]
fn a_get_keeps_asking_while_a_later_table_may_hold_a_newer_version() {
    use std::path::Path;

    use crate::env::{ReadCause, WriteCause};
    use crate::key::{MAX_SEQNO, ValueKind, make_internal_key, seek_key};
    use crate::layout::{Layout, ReadContext};
    use crate::options::TableOptions;
    use crate::table::test_fs::TestFs;
    use crate::table::{TableBuilder, table_file_name};

    let (_fs, env) = TestFs::env();
    let write = |number: u64, entries: &[(&str, u64, &str)]| {
        let path = Path::new("/db").join(table_file_name(number));
        let f = env.create(&path, WriteCause::Compaction).unwrap();
        let mut b = TableBuilder::new(f, &TableOptions::default());
        for (k, seq, v) in entries {
            b.add(
                &make_internal_key(k.as_bytes(), *seq, ValueKind::Value),
                v.as_bytes(),
            )
            .unwrap();
        }
        b.finish().unwrap().size
    };
    // Table 5 (sequences 200-300) holds k@250; table 6 (sequences 5-260) holds k@260, the
    // newer version, and is listed after 5 in the guard.
    let s5 = write(
        5,
        &[("a", 300, "a300"), ("k", 250, "old"), ("z", 200, "z200")],
    );
    let s6 = write(6, &[("a", 5, "a5"), ("k", 260, "new"), ("z", 6, "z6")]);
    let v = parse(&format!(
        "G1: m\nG2: m\nL2: 5:a-z/{s5}@200-300 6:a-z/{s6}@5-260"
    ))
    .unwrap();
    assert_eq!(
        v.unit_files(2, 0)
            .iter()
            .map(|f| f.number)
            .collect::<Vec<_>>(),
        [5, 6],
        "newest largest sequence first"
    );
    let tables = table_cache(&env);
    let ctx = ReadContext {
        tables: &tables,
        read: ReadCause::Get.into(),
    };
    let layout = super::Flsm::new(&flsm_options());
    let got = layout
        .get(&v, &ctx, b"k", &seek_key(b"k", MAX_SEQNO))
        .unwrap()
        .unwrap();
    assert_eq!(got.1, b"new");
    // At a snapshot before 260 the version in table 5 is the answer.
    let got = layout
        .get(&v, &ctx, b"k", &seek_key(b"k", 255))
        .unwrap()
        .unwrap();
    assert_eq!(got.1, b"old");
}

// The paper's policy (PebblesDB §3.4): an overflowing or hot guard goes down into the next
// level's guards; only the last level, and the second-to-last by the 25x rule, merge in
// place.

fn run_paper_with(desc: &str, busy: &Busy, hot: &[(usize, usize)]) -> String {
    let v = parse(desc).unwrap();
    let cfg = PickerConfig {
        policy: FlsmPolicy::Paper,
        ..cfg()
    };
    match pick(&v, &cfg, busy, hot) {
        Some(p) => format!("{} because {}", p.describe(), p.reason),
        None => "nothing".to_string(),
    }
}

fn run_paper(desc: &str) -> String {
    run_paper_with(desc, &Busy::default(), &[])
}

#[test]
fn paper_overflowing_guard_goes_down_into_the_next_level() {
    // The sentinel holds 3 tables (max 2): all three are merged and appended to level 2,
    // where the compaction cuts them at level 2's guards.
    assert_eq!(
        run_paper("G1: m\nG2: g m t\nL1: 1:a-c 2:b-d 3:a-b 4:n-p 5:m-q"),
        "L1[3,2,1] -> L2 (merge) because L1 guard 0 holds 3 tables (max 2)"
    );
    // The whole guard goes, a large old table too (nothing stays behind to be rewritten
    // in this level later).
    assert_eq!(
        run_paper("G1: m\nL1: 1:a-c/40K 2:b-d/1K 3:a-b/1K"),
        "L1[3,2,1] -> L2 (merge) because L1 guard 0 holds 3 tables (max 2)"
    );
    // ... with the tables its tables reach (the closure): table 1 spans both guards.
    let got = run_paper("G1: m t\nL1: 1:a-p 2:n-o 3:b-c 4:u-z 5:m-n");
    assert!(
        got.starts_with("L1[") && got.contains("-> L2 (merge) because L1 guard 1 holds 3"),
        "{got}"
    );
    for t in ["1", "2", "3", "5"] {
        assert!(got.split(']').next().unwrap().contains(t), "{got}");
    }
    // A guard within its limit stays where it is.
    assert_eq!(run_paper("G1: m\nL1: 1:a-c 2:b-d 4:n-p 5:m-q"), "nothing");
}

#[test]
fn paper_the_last_level_merges_in_place_whole() {
    assert_eq!(
        run_paper("G6: m\nL6: 1:m-n/40K 2:m-o/1K 3:n-p/1K"),
        "L6[3,2,1] -> L6 (merge) because L6 guard 1 holds 3 tables (max 2); the last level \
         merges in place"
    );
}

#[test]
fn paper_the_25x_rule_rewrites_an_overflow_at_the_second_to_last_level() {
    // Guard m of L5 overflows; the last-level guard it would land on is full (2 tables)
    // and holds 100M, more than 25 x 3M: rewritten in place.
    assert_eq!(
        run_paper("G5: m\nG6: m\nL5: 2:m-n/1M 3:m-o/1M 4:m-p/1M\nL6: 8:m-p/50M 9:m-q/50M"),
        "L5[4,3,2] -> L5 (merge) because L5 guard 1 holds 3 tables (max 2); rewritten in place \
         (25x rule: 104857600 bytes below)"
    );
    // Small last-level guards: pushed down.
    assert_eq!(
        run_paper("G5: m\nG6: m\nL5: 2:m-n/1M 3:m-o/1M 4:m-p/1M\nL6: 8:m-p/1M 9:m-q/1M"),
        "L5[4,3,2] -> L6 (merge) because L5 guard 1 holds 3 tables (max 2)"
    );
    // Not full (one table, below the limit of 2): pushed down however large.
    assert_eq!(
        run_paper("G5: m\nG6: m\nL5: 2:m-n/1M 3:m-o/1M 4:m-p/1M\nL6: 8:m-p/500M"),
        "L5[4,3,2] -> L6 (merge) because L5 guard 1 holds 3 tables (max 2)"
    );
}

#[test]
fn paper_hot_guards_go_down_and_merge_in_place_only_at_the_last_level() {
    let tree = "G2: m\nL2: 1:a-c 2:b-d 3:m-n";
    assert_eq!(run_paper(tree), "nothing");
    assert_eq!(
        run_paper_with(tree, &Busy::default(), &[(2, 0)]),
        "L2[2,1] -> L3 (merge) because seeks keep landing on L2 guard 0 (2 tables)"
    );
    assert_eq!(run_paper_with(tree, &Busy::default(), &[(2, 1)]), "nothing");
    let tree = "G6: m\nL6: 1:a-c 2:b-d 3:m-n";
    assert_eq!(
        run_paper_with(tree, &Busy::default(), &[(6, 0)]),
        "L6[2,1] -> L6 (merge) because seeks keep landing on L6 guard 0 (2 tables)"
    );
    // A push waits while another compaction writes into the range below.
    let busy = Busy {
        files: HashSet::new(),
        writing: vec![(3, b"a".to_vec(), b"b".to_vec())],
    };
    assert_eq!(
        run_paper_with("G2: m\nL2: 1:a-c 2:b-d 3:m-n", &busy, &[(2, 0)]),
        "nothing"
    );
}

#[test]
fn paper_policy_is_the_presets_and_its_seeks_push_guards_down() {
    use crate::layout::{Layout, PickContext};
    let layout = super::Flsm::new(&paper_flsm_options());
    let v = parse("G1: m\nL1: 1:a-c/1K 2:b-d/1K 3:m-n/1K").unwrap();
    assert!(layout.pick(&v, &PickContext::idle()).is_none());
    assert!(!layout.note_seek(&v, b"a"));
    assert!(!layout.note_seek(&v, b"b"));
    assert!(layout.note_seek(&v, b"c"), "third seek into guard 0");
    let p = layout.pick(&v, &PickContext::idle()).unwrap();
    assert_eq!(
        format!("{} because {}", p.describe(), p.reason),
        "L1[2,1] -> L2 (merge) because seeks keep landing on L1 guard 0 (2 tables)"
    );
    // Every table of the guard goes down: it is not hot any more.
    assert!(layout.pick(&v, &PickContext::idle()).is_none());
    // An overflow goes down too.
    let v = parse("G1: m\nL1: 1:a-c/1K 2:b-d/1K 3:a-b/1K").unwrap();
    assert_eq!(
        layout.pick(&v, &PickContext::idle()).map(|p| p.describe()),
        Some("L1[3,2,1] -> L2 (merge)".to_string())
    );
}

/// The level iterator over guard ranges whose tables span several ranges (written before a
/// guard inside their span was committed), ranges without tables, and several versions of
/// a guard key: random walks of seeks, steps and direction changes match the sorted entries
/// of the level, each entry once. `valid`'s debug assertion checks the kept flag each time.
#[test]
fn guard_level_iterator_walks_match_the_sorted_entries() {
    use std::cmp::Ordering;
    use std::path::Path;
    use std::sync::Arc;

    use crate::env::{ReadCause, WriteCause};
    use crate::iter::InternalIterator;
    use crate::key::{MAX_SEQNO, ValueKind, compare_internal, make_internal_key, seek_key};
    use crate::options::TableOptions;
    use crate::table::test_fs::TestFs;
    use crate::table::{TableBuilder, table_file_name};

    let (_fs, env) = TestFs::env();
    let mut all: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut write = |number: u64, entries: &[(&str, u64)]| {
        let mut es: Vec<(Vec<u8>, Vec<u8>)> = entries
            .iter()
            .map(|(k, s)| {
                (
                    make_internal_key(k.as_bytes(), *s, ValueKind::Value),
                    format!("{k}@{s}").into_bytes(),
                )
            })
            .collect();
        es.sort_by(|a, b| compare_internal(&a.0, &b.0));
        let path = Path::new("/db").join(table_file_name(number));
        let f = env.create(&path, WriteCause::Compaction).unwrap();
        let mut b = TableBuilder::new(f, &TableOptions::default());
        for (k, v) in &es {
            b.add(k, v).unwrap();
        }
        all.extend(es);
        b.finish().unwrap().size
    };
    // Guards c f j m t u w: ranges [-inf,c) [c,f) [f,j) [j,m) [m,t) [t,u) [u,w) [w,inf).
    // Table 1 spans b..k (four ranges), with versions of the guard keys c, f, j; [t,u) and
    // [u,w) hold no table; table 5 alone holds [w,inf).
    let s1 = write(
        1,
        &[
            ("b", 10),
            ("c", 11),
            ("c", 12),
            ("d", 13),
            ("e", 14),
            ("f", 15),
            ("f", 16),
            ("g", 17),
            ("h", 18),
            ("i", 19),
            ("j", 20),
            ("j", 21),
            ("k", 22),
        ],
    );
    let s2 = write(2, &[("c", 30), ("d", 31), ("ee", 32)]);
    let s3 = write(3, &[("f", 40), ("f", 41), ("g", 42), ("ii", 43)]);
    let s4 = write(4, &[("m", 50), ("n", 51), ("o", 52), ("s", 53), ("s", 54)]);
    let s5 = write(5, &[("w", 60), ("x", 61)]);
    // Table 6 spans j..o (two ranges) and is newer than everything.
    let s6 = write(6, &[("j", 70), ("l", 71), ("m", 72), ("o", 73)]);
    all.sort_by(|a, b| compare_internal(&a.0, &b.0));
    let v = Arc::new(
        parse(&format!(
            "G2: c f j m t u w\nL2: 1:b-k/{s1}@10-22 2:c-ee/{s2}@30-32 3:f-ii/{s3}@40-43 \
             4:m-s/{s4}@50-54 5:w-x/{s5}@60-61 6:j-o/{s6}@70-73"
        ))
        .unwrap(),
    );
    assert_eq!(v.unit_files(2, 0).len(), 1, "table 1 reaches the sentinel");
    assert_eq!(v.unit_files(2, 3).len(), 2, "tables 1 and 6 reach [j,m)");
    assert!(v.unit_files(2, 5).is_empty() && v.unit_files(2, 6).is_empty());
    let tables = table_cache(&env);
    let users = [
        "a", "b", "c", "cc", "d", "e", "f", "g", "j", "k", "l", "m", "s", "t", "u", "v", "w", "x",
        "y",
    ];
    for parallel_min in [0, 2] {
        let mut it = super::iter::GuardLevelIterator::new(
            Arc::clone(&v),
            2,
            Arc::clone(&tables),
            ReadCause::Scan.into(),
            parallel_min,
        );
        // Full walks both ways.
        it.seek_to_first().unwrap();
        let mut fwd = Vec::new();
        while it.valid() {
            fwd.push(it.key().to_vec());
            it.next().unwrap();
        }
        assert_eq!(fwd, all.iter().map(|e| e.0.clone()).collect::<Vec<_>>());
        it.seek_to_last().unwrap();
        let mut back = Vec::new();
        while it.valid() {
            back.push(it.key().to_vec());
            it.prev().unwrap();
        }
        back.reverse();
        assert_eq!(back, fwd);
        // Random walks with direction changes.
        let mut rng = crate::iter::testutil::Rng::new(7 + parallel_min as u64);
        let mut pos: Option<usize> = None;
        for step in 0..5000 {
            let r = rng.next_u64() % 8;
            let u = users[(rng.next_u64() % users.len() as u64) as usize].as_bytes();
            let seq = [MAX_SEQNO, 0, 12, 16, 21, 41, 54, 72][(rng.next_u64() % 8) as usize];
            let target = seek_key(u, seq);
            match r {
                0 => {
                    it.seek(&target).unwrap();
                    pos = all
                        .iter()
                        .position(|e| compare_internal(&e.0, &target) != Ordering::Less);
                }
                1 => {
                    it.seek_for_prev(&target).unwrap();
                    pos = all
                        .iter()
                        .rposition(|e| compare_internal(&e.0, &target) != Ordering::Greater);
                }
                2 if pos.is_none() => {
                    it.seek_to_first().unwrap();
                    pos = Some(0);
                }
                3 if pos.is_none() => {
                    it.seek_to_last().unwrap();
                    pos = Some(all.len() - 1);
                }
                _ if pos.is_none() => continue,
                4..=5 => {
                    it.next().unwrap();
                    pos = pos.and_then(|p| (p + 1 < all.len()).then_some(p + 1));
                }
                _ => {
                    it.prev().unwrap();
                    pos = pos.and_then(|p| p.checked_sub(1));
                }
            }
            match pos {
                Some(p) => {
                    assert!(it.valid(), "step {step} op {r}: want {:?}", all[p].1);
                    assert_eq!(it.key(), all[p].0.as_slice(), "step {step} op {r}");
                    assert_eq!(it.value(), all[p].1.as_slice(), "step {step} op {r}");
                }
                None => assert!(!it.valid(), "step {step} op {r}: at {:?}", it.value()),
            }
        }
    }
}

/// A table cache over the tables the tests above write to `/db` of `env`.
fn table_cache(env: &crate::env::Env) -> std::sync::Arc<crate::table::cache::TableCache> {
    std::sync::Arc::new(crate::table::cache::TableCache::new(
        env.clone(),
        "/db".into(),
        10,
        std::sync::Arc::new(crate::table::SstFormat),
        None,
        true,
        None,
    ))
}
