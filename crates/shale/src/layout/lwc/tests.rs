//! The LWC layout: its picker on described trees, routing, and lightweight compaction
//! through a whole store (appends keep every version a snapshot needs, deletes, reopen).

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "a test helper's failure is a test failure"
)]

use std::collections::BTreeMap;

use super::picker::{PickerConfig, pick, pick_range};
use super::*;
use crate::layout::BusyRange;
use crate::version::text;

fn cfg() -> PickerConfig {
    PickerConfig {
        level0_trigger: 4,
        base_bytes: 10 << 20,
        multiplier: 10,
        max_table_size: 8 << 20,
        division: 4,
        max_segments: 8,
        seek_merges: false,
    }
}

/// A described tree whose tables hold the given segment counts.
fn tree(desc: &str, segs: &[(u64, u32)]) -> Version {
    let v = text::parse_with(desc, Arc::new(LwcState::default()), &|_, _| {
        panic!("no guards in an lwc tree")
    })
    .unwrap();
    let mut e = VersionEdit::default();
    for &(n, c) in segs {
        e.records.push(segments_record(n, c));
    }
    v.apply(&e).unwrap()
}

fn run_with(v: &Version, running: &PickContext) -> String {
    match pick(v, &cfg(), running, &[]) {
        Some(p) => format!("{} because {}", p.describe(), p.reason),
        None => "nothing".to_string(),
    }
}

fn run(desc: &str, segs: &[(u64, u32)]) -> String {
    run_with(&tree(desc, segs), &PickContext::idle())
}

#[test]
fn level0_appends_to_the_tables_below_or_starts_level1() {
    assert_eq!(run("L0: 1:c-e 2:d-f 3:e-g", &[]), "nothing");
    assert_eq!(
        run(
            "L0: 1:c-e 2:d-f 3:e-g 4:c-d\nL1: 5:a-b 6:c-d 7:f-h 8:x-z",
            &[]
        ),
        "L0[4,3,2,1]+L1[6,7] -> L1 (append) because L0 has 4 files (trigger 4)"
    );
    assert_eq!(
        run("L0: 1:c-e 2:d-f 3:e-g 4:c-d\nL1: 8:x-z", &[]),
        "L0[4,3,2,1] -> L1 (merge) because L0 has 4 files (trigger 4)"
    );
}

#[test]
fn a_full_level_sends_its_largest_table_down() {
    // L1 is 12M over its 10M limit; table 4 is the largest.
    assert_eq!(
        run("L1: 3:a-f/5M 4:g-k/7M\nL2: 10:a-c/4M 11:h-i/4M", &[]),
        "L1[4]+L2[11] -> L2 (append) because L1 score 1.20"
    );
    // Nothing below its range: a move.
    assert_eq!(
        run("L1: 3:a-f/5M 4:g-k/7M\nL2: 10:a-c/4M 11:m-p/1M", &[]),
        "L1[4] -> L2 (move) because L1 score 1.20"
    );
    // Its tables below busy: the next largest.
    let v = tree("L1: 3:a-f/5M 4:g-k/7M\nL2: 10:a-c/4M 11:h-i/4M", &[]);
    let running = PickContext {
        busy_files: [11].into_iter().collect(),
        busy_ranges: vec![BusyRange {
            output_level: 3,
            smallest: b"h".to_vec(),
            largest: b"i".to_vec(),
        }],
    };
    assert_eq!(
        run_with(&v, &running),
        "L1[3]+L2[10] -> L2 (append) because L1 score 1.20"
    );
}

#[test]
fn divisions_take_tables_grown_by_appends_and_never_fresh_ones() {
    // Table 5 is 10M (limit 8M) in 3 segments; table 6 is as big but one segment.
    assert_eq!(
        run("L2: 5:a-c/10M 6:d-f/10M", &[(5, 3)]),
        "L2[5] -> L2 (merge) because L2 table 5 of 10485760 bytes in 3 segments (division score 1.25)"
    );
    assert_eq!(run("L2: 6:d-f/10M", &[]), "nothing");
    // Too many segments divides a small table; the last level divides too.
    assert_eq!(
        run("L6: 7:a-c/1M", &[(7, 12)]),
        "L6[7] -> L6 (merge) because L6 table 7 of 1048576 bytes in 12 segments (division score 1.50)"
    );
    assert_eq!(run("L6: 7:a-c/1M", &[(7, 8)]), "nothing");
    // A level's score above a division's goes first.
    assert_eq!(
        run("L1: 3:a-f/15M\nL2: 10:a-c/9M", &[(10, 2)]),
        "L1[3]+L2[10] -> L2 (append) because L1 score 1.50"
    );
}

/// Tables due for seeks are compacted only when no score calls: pushed down onto the
/// tables below them, or, with nothing below (or with `seek_merges`), their segments merged
/// in their own level; a one-segment table with nothing below stays.
#[test]
fn tables_due_for_seeks_go_down_or_merge_their_segments() {
    let run_due = |desc: &str, segs: &[(u64, u32)], due: &[(usize, u64)], merges: bool| {
        let c = PickerConfig {
            seek_merges: merges,
            ..cfg()
        };
        match pick(&tree(desc, segs), &c, &PickContext::idle(), due) {
            Some(p) => format!("{} because {}", p.describe(), p.reason),
            None => "nothing".to_string(),
        }
    };
    let desc = "L1: 3:a-f/1M 4:g-k/1M\nL2: 10:a-c/4M 11:h-i/4M 12:x-z/1M";
    assert_eq!(run_due(desc, &[(3, 3)], &[], false), "nothing");
    assert_eq!(
        run_due(desc, &[(3, 3)], &[(1, 3)], false),
        "L1[3]+L2[10] -> L2 (append) because seeks used up the allowance of L1 table 3"
    );
    assert_eq!(
        run_due(desc, &[(3, 3)], &[(1, 3)], true),
        "L1[3] -> L1 (merge) because seeks used up the allowance of L1 table 3"
    );
    // One segment: pushed down whatever `seek_merges` says.
    assert_eq!(
        run_due(desc, &[], &[(1, 4)], true),
        "L1[4]+L2[11] -> L2 (append) because seeks used up the allowance of L1 table 4"
    );
    // Nothing below: segments merged; one segment stays; a table gone is skipped.
    assert_eq!(
        run_due(desc, &[(12, 4)], &[(9, 1), (2, 12)], false),
        "L2[12] -> L2 (merge) because seeks used up the allowance of L2 table 12"
    );
    assert_eq!(run_due(desc, &[], &[(2, 12)], false), "nothing");
    // A score at least 1 goes first.
    assert_eq!(
        run_due("L1: 3:a-f/12M\nL2: 10:a-c/4M", &[], &[(2, 10)], false),
        "L1[3]+L2[10] -> L2 (append) because L1 score 1.20"
    );
}

/// Iterator read samples charge as gets do: the first table whose range holds the key,
/// when a second one does or when it holds several segments; the charged table is what
/// the layout picks once its allowance is used up.
#[test]
fn read_samples_charge_the_first_table_and_pick_it() {
    let v = tree("L1: 3:a-f/1K\nL2: 10:a-z/1K", &[(10, 3)]);
    let mut o = Options::preset("lwc").unwrap();
    o.lwc.seek_compaction_min_seeks = 2;
    let layout = Lwc::new(&o);
    assert!(layout.pick(&v, &PickContext::idle()).is_none());
    assert!(!layout.note_read_sample(&v, b"b"));
    assert!(
        layout.note_read_sample(&v, b"c"),
        "two samples use up table 3's allowance"
    );
    assert_eq!(
        layout.pick(&v, &PickContext::idle()).unwrap().describe(),
        "L1[3]+L2[10] -> L2 (append)"
    );
    assert!(
        layout.pick(&v, &PickContext::idle()).is_none(),
        "picked once"
    );
    // Table 10 alone holds "x", in three segments.
    assert!(!layout.note_read_sample(&v, b"x"));
    assert!(layout.note_read_sample(&v, b"x"));
    assert_eq!(
        layout.pick(&v, &PickContext::idle()).unwrap().describe(),
        "L2[10] -> L2 (merge)"
    );
    // A table of one segment alone in its range is never charged; nor anything when off.
    let one = tree("L2: 10:a-z/1K", &[]);
    assert!((0..10).all(|_| !layout.note_read_sample(&one, b"x")));
    o.lwc.seek_compaction = false;
    let off = Lwc::new(&o);
    assert!((0..10).all(|_| !off.note_read_sample(&v, b"b")));
    assert!(off.pick(&v, &PickContext::idle()).is_none());
}

#[test]
fn routing_splits_by_range_and_balances_gaps() {
    let v = tree("L1: 1:c-e/4M 2:h-j/1M 3:p-r/9M", &[]);
    let t = v.level(1);
    let r = |k: &str| route(t, k.as_bytes());
    assert_eq!(r("a"), 0);
    assert_eq!(r("c"), 0);
    assert_eq!(r("e"), 0);
    // Between 1 (4M) and 2 (1M): the smaller, 2.
    assert_eq!(r("f"), 1);
    assert_eq!(r("h"), 1);
    // Between 2 (1M) and 3 (9M): 2.
    assert_eq!(r("k"), 1);
    assert_eq!(r("q"), 2);
    assert_eq!(r("z"), 2);
    let mut prev = 0;
    for b in b'a'..=b'z' {
        let i = route(t, &[b]);
        assert!(i >= prev, "route decreases at {}", b as char);
        prev = i;
    }
    assert_eq!(route(&t[..1], b"zz"), 0);
}

#[test]
fn manual_ranges_push_level_by_level() {
    let v = tree("L0: 1:a-c\nL1: 2:a-b 3:x-z\nL2: 4:a-z", &[]);
    assert_eq!(
        pick_range(&v, 1, Some(b"w"), None).unwrap().describe(),
        "L1[3]+L2[4] -> L2 (append)"
    );
    assert!(pick_range(&v, 1, Some(b"c"), Some(b"d")).is_none());
    assert!(pick_range(&v, 6, None, None).is_none());
    assert_eq!(
        pick_range(&v, 0, None, None).unwrap().describe(),
        "L0[1]+L1[2] -> L1 (append)"
    );
    let v = tree("L1: 2:a-b\nL3: 4:a-z", &[]);
    assert_eq!(
        pick_range(&v, 1, None, None).unwrap().describe(),
        "L1[2] -> L2 (move)"
    );
}

/// Plans picked one after another beside each other are pairwise compatible (no shared
/// input, no output ranges meeting at a level), on random trees.
#[test]
fn repeated_picks_give_pairwise_compatible_plans() {
    use crate::iter::testutil::Rng;
    let key = |i: u64| format!("k{i:03}");
    let mut rng = Rng::new(11);
    for round in 0..200 {
        let mut desc = String::new();
        let mut number = 1;
        let mut segs = Vec::new();
        for level in 0..=4u64 {
            desc.push_str(&format!("L{level}:"));
            let mut at = rng.below(20);
            while at < 990 {
                let hi = at + rng.below(8 * (level + 1));
                let mb = 1 + rng.below(4 * 10u64.pow(level.max(1) as u32 - 1));
                desc.push_str(&format!(" {number}:{}-{}/{mb}M", key(at), key(hi.min(999))));
                if rng.below(3) == 0 {
                    segs.push((number, 1 + rng.below(12) as u32));
                }
                number += 1;
                at = if level == 0 {
                    rng.below(900)
                } else {
                    hi + 1 + rng.below(10 * level)
                };
                if level == 0 && rng.below(4) == 0 {
                    break;
                }
            }
            desc.push('\n');
        }
        let v = tree(&desc, &segs);
        let mut plans: Vec<Plan> = Vec::new();
        while let Some(p) = pick(&v, &cfg(), &PickContext::of_plans(&plans), &[]) {
            assert!(
                plans.iter().all(|q| q
                    .input_files()
                    .all(|(_, f)| !p.input_files().any(|(_, g)| g.number == f.number))),
                "round {round}: {} reads a busy file",
                p.describe()
            );
            for q in &plans {
                assert!(
                    PickContext::of_plans([q]).allows(&p),
                    "round {round}: {} beside {}",
                    p.describe(),
                    q.describe()
                );
            }
            if p.kind == PlanKind::Append {
                let lo = p.inputs[0].1.iter().map(|f| f.smallest_user_key()).min();
                let hi = p.inputs[0].1.iter().map(|f| f.largest_user_key()).max();
                assert!(!v.overlapping(p.output_level, lo, hi).is_empty());
            }
            plans.push(p);
        }
    }
}

// ---- through a store ----

use crate::Db;
use crate::db::testutil::settle;
use crate::env::Env;
use crate::options::Options;

const DIR: &str = "/db";

fn opts(env: &Env) -> Options {
    let mut o = Options::preset("lwc").unwrap();
    o.env = env.clone();
    o.write_buffer_size = 8 * 1024;
    o.target_file_size = 16 * 1024;
    o.max_bytes_for_level_base = 24 * 1024;
    o.level_size_multiplier = 4;
    o.table.block_size = 512;
    o.lwc.division = 4;
    o.lwc.max_segments = 6;
    o
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn value(i: u32, round: u32) -> Vec<u8> {
    let mut v = format!("v{i}.{round}:").into_bytes();
    v.resize(
        20 + (i as usize * 13 + round as usize) % 60,
        b'a' + (round % 26) as u8,
    );
    v
}

fn levels(db: &Db) -> Vec<usize> {
    db.property("shale.levels")
        .unwrap()
        .split(' ')
        .map(|n| n.parse().unwrap())
        .collect()
}

fn segments_total(db: &Db) -> u64 {
    (0..7)
        .map(|l| {
            db.property(&format!("shale.lwc.segments-at-level{l}"))
                .unwrap()
                .parse::<u64>()
                .unwrap()
        })
        .sum()
}

fn check(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, universe: u32) {
    for i in 0..universe {
        assert_eq!(
            db.get(&key(i)).unwrap().as_deref(),
            model.get(&key(i)).map(Vec::as_slice),
            "key {i}"
        );
    }
    let got: BTreeMap<Vec<u8>, Vec<u8>> = db
        .iter(crate::IterOptions::default())
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(&got, model);
}

/// Random overwrites and deletes: tables below grow by appends (more segments than
/// tables), every read stays right before and after a reopen, and the store verifies.
#[test]
fn lightweight_compaction_appends_and_reads_stay_right() {
    let env = Env::memory();
    // Reads here must not merge the appended segments away (seek-triggered compaction is
    // tested on its own): the segment count is checked again after the reads.
    let opts = |env: &Env| {
        let mut o = opts(env);
        o.lwc.seek_compaction = false;
        o
    };
    let db = Db::open(DIR, opts(&env)).unwrap();
    let mut model = BTreeMap::new();
    let mut rng = crate::iter::testutil::Rng::new(5);
    let n = 3000;
    for step in 0..12_000u32 {
        let i = rng.below(u64::from(n)) as u32;
        if rng.below(10) == 0 {
            db.delete(&key(i)).unwrap();
            model.remove(&key(i));
        } else {
            db.put(&key(i), &value(i, step)).unwrap();
            model.insert(key(i), value(i, step));
        }
    }
    db.flush().unwrap();
    let l = levels(&db);
    assert!(l.iter().skip(1).any(|&n| n > 0), "{l:?}");
    let segs = segments_total(&db);
    let files: usize = l.iter().sum();
    assert!(
        segs > files as u64,
        "no table grew by an append: {segs} segments in {files} tables"
    );
    let stats = db.stats();
    check(&db, &model, n);
    db.close().unwrap();
    let db = Db::open(DIR, opts(&env)).unwrap();
    check(&db, &model, n);
    // The counts came back from the MANIFEST (compactions may have run since).
    assert!(segments_total(&db) > levels(&db).iter().sum::<usize>() as u64);
    db.compact_range(None, None).unwrap();
    check(&db, &model, n);
    db.close().unwrap();
    let report = crate::verify(DIR, opts(&env)).unwrap();
    assert!(report.tables > 0);
    // Appends counted what they wrote below level 0.
    assert!(
        stats
            .levels
            .iter()
            .skip(1)
            .any(|l| l.compaction_written > 0),
        "{stats:?}"
    );
}

/// A snapshot taken before overwrites and deletes keeps reading its values while
/// lightweight compactions push the newer versions into the tables below.
#[test]
fn snapshots_keep_their_versions_through_appends() {
    let env = Env::memory();
    // No divisions: a table divided by size or by its segment count has one segment again,
    // and how many appends reach a table before the last `compact_range` depends on when the
    // background compactions ran (under load, up to every table divided: the check below
    // then failed).
    let mut o = opts(&env);
    o.target_file_size = 1 << 20;
    o.lwc.max_segments = 64;
    let db = Db::open(DIR, o).unwrap();
    let n = 1500;
    for i in 0..n {
        db.put(&key(i), &value(i, 0)).unwrap();
    }
    db.compact_range(None, None).unwrap();
    let snap = db.snapshot();
    for round in 1..4 {
        for i in (0..n).filter(|i| i % (round + 1) == 0) {
            if round == 3 && i % 2 == 0 {
                db.delete(&key(i)).unwrap();
            } else {
                db.put(&key(i), &value(i, round)).unwrap();
            }
        }
        db.flush().unwrap();
    }
    db.compact_range(None, None).unwrap();
    assert!(segments_total(&db) > levels(&db).iter().sum::<usize>() as u64);
    for i in 0..n {
        assert_eq!(
            db.get_at(&key(i), &snap).unwrap(),
            Some(value(i, 0)),
            "key {i} at the snapshot"
        );
        let want = if i % 4 == 0 {
            None
        } else if i % 3 == 0 {
            Some(value(i, 2))
        } else if i % 2 == 0 {
            Some(value(i, 1))
        } else {
            Some(value(i, 0))
        };
        assert_eq!(db.get(&key(i)).unwrap(), want, "key {i}");
    }
    drop(snap);
    db.compact_range(None, None).unwrap();
    for i in (0..n).step_by(4) {
        assert_eq!(db.get(&key(i)).unwrap(), None, "key {i}");
    }
    db.close().unwrap();
    crate::verify(DIR, opts(&env)).unwrap();
}

/// Gets that look into tables of several segments charge them, and once their allowance
/// is used up the tables are compacted: every table ends with one segment, and every read
/// stays right.
#[test]
fn gets_into_tables_of_several_segments_compact_them() {
    let env = Env::memory();
    let mut o = opts(&env);
    o.lwc.seek_compaction_min_seeks = 3;
    o.lwc.seek_compaction_bytes_per_seek = u64::MAX;
    let db = Db::open(DIR, o.clone()).unwrap();
    let n = 1500;
    let mut model = BTreeMap::new();
    for round in 0..3 {
        for i in (0..n).filter(|i| i % (round + 1) == 0) {
            db.put(&key(i), &value(i, round)).unwrap();
            model.insert(key(i), value(i, round));
        }
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
    }
    settle(&db);
    let files = |db: &Db| levels(db).iter().sum::<usize>() as u64;
    assert!(
        segments_total(&db) > files(&db),
        "the test needs appended tables"
    );
    for _ in 0..4 {
        for i in 0..n {
            assert_eq!(db.get(&key(i)).unwrap(), model.get(&key(i)).cloned());
        }
        settle(&db);
    }
    assert_eq!(
        segments_total(&db),
        files(&db),
        "tables of several segments are left: {:?}",
        levels(&db)
    );
    check(&db, &model, n);
    db.close().unwrap();
    crate::verify(DIR, o).unwrap();
}
