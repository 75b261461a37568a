//! The FLSM layout end to end: guards are committed with compactions, survive reopening, and
//! reads find every key across guard ranges.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "a test helper's failure is a test failure"
)]

use std::sync::Arc;

use shale::env::Env;
use shale::env::mem::MemFs;
use shale::{Db, FlsmPolicy, IterOptions, Options};

fn opts(env: &Env) -> Options {
    let mut o = Options::preset("pebblesdb").unwrap().with_env(env.clone());
    o.write_buffer_size = 32 * 1024;
    o.target_file_size = 16 * 1024;
    o.max_bytes_for_level_base = 64 * 1024;
    o.level_size_multiplier = 4;
    o.flsm.top_level_bits = 5;
    o.flsm.bit_decrement = 1;
    o
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn guards(db: &Db, level: usize) -> usize {
    db.property(&format!("shale.num-guards-at-level{level}"))
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn guards_are_committed_persisted_and_reads_cross_them() {
    let env = Env::new(Arc::new(MemFs::new()));
    let db = Db::open("/db", opts(&env)).unwrap();
    assert_eq!(guards(&db, 1), 0);
    for i in 0..3000 {
        db.put(&key(i * 7 % 3000), format!("v{i}").as_bytes())
            .unwrap();
    }
    db.compact_range(None, None).unwrap();
    let g1 = guards(&db, 1);
    // about 3000 / 2^5 keys are level-1 guards
    assert!((40..200).contains(&g1), "{g1} guards at level 1");
    // The guard keys themselves, in order, hex per line: keys of the store, nested.
    let keys = |level: usize| -> Vec<Vec<u8>> {
        db.property(&format!("shale.guards-at-level{level}"))
            .unwrap()
            .lines()
            .map(|l| {
                (0..l.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&l[i..i + 2], 16).unwrap())
                    .collect()
            })
            .collect()
    };
    let k1 = keys(1);
    assert_eq!(k1.len(), g1);
    assert!(k1.windows(2).all(|w| w[0] < w[1]), "in order");
    assert!(k1.iter().all(|k| k.starts_with(b"key")), "{k1:?}");
    let k2 = keys(2);
    assert!(
        k1.iter().all(|k| k2.contains(k)),
        "a level's guards are guards below it"
    );
    assert_eq!(db.property("shale.guards-at-level99"), None);
    assert_eq!(guards(&db, 0), 0);
    assert!(guards(&db, 2) >= g1);
    db.close().unwrap();

    let db = Db::open("/db", opts(&env)).unwrap();
    assert_eq!(guards(&db, 1), g1, "guards come back from the MANIFEST");
    for i in 0..3000 {
        let want = format!("v{}", (0..3000).find(|j| j * 7 % 3000 == i).unwrap());
        assert_eq!(db.get(&key(i)).unwrap(), Some(want.into_bytes()), "key {i}");
    }
    let keys: Vec<Vec<u8>> = db
        .iter(IterOptions::default())
        .unwrap()
        .map(|r| r.unwrap().0)
        .collect();
    assert_eq!(keys, (0..3000).map(key).collect::<Vec<_>>());
    let back: Vec<Vec<u8>> = db
        .iter(IterOptions::default())
        .unwrap()
        .rev()
        .map(|r| r.unwrap().0)
        .collect();
    assert_eq!(back.len(), 3000);
    assert_eq!(back.first(), Some(&key(2999)));
    // A cursor seeks into the middle of guard ranges and walks across them.
    let mut c = db.cursor(IterOptions::default()).unwrap();
    for i in (0..3000).step_by(97) {
        c.seek(&key(i)).unwrap();
        for j in i..(i + 40).min(3000) {
            assert_eq!(c.key(), key(j).as_slice());
            c.next().unwrap();
        }
    }
    db.close().unwrap();
}

/// Waits for background compaction to empty level 0 (a condition, not a fixed delay).
fn wait_level0_empty(db: &Db) {
    let start = std::time::Instant::now();
    while db.property("shale.num-files-at-level0").as_deref() != Some("0") {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "level 0 never drained"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

#[test]
fn gets_find_the_newest_version_among_many_fragments_of_a_guard() {
    // Every level-0 compaction appends one fragment to each level-1 guard and nothing merges
    // them, so a guard ends up with more tables than a get asks at once (8): the newest
    // version of a key may sit in any batch, older ones in later batches.
    let env = Env::new(Arc::new(MemFs::new()));
    let mut o = opts(&env);
    o.write_buffer_size = 1 << 20;
    o.level0_compaction_trigger = 1;
    o.max_bytes_for_level_base = 1 << 30;
    o.flsm.max_sstables_per_guard = 1000;
    o.flsm.seek_compaction_trigger = 0;
    o.flsm.top_level_bits = 8;
    let db = Db::open("/db", o).unwrap();
    let rounds = 20u32;
    for r in 0..rounds {
        for i in 0..300u32 {
            if (i + r) % 7 == 0 || r == 0 {
                db.put(&key(i), format!("v{i}r{r}").as_bytes()).unwrap();
            }
        }
        db.flush().unwrap();
        wait_level0_empty(&db);
    }
    let files1: usize = db
        .property("shale.num-files-at-level1")
        .unwrap()
        .parse()
        .unwrap();
    assert!(files1 >= rounds as usize, "{files1} tables at level 1");
    for i in 0..300u32 {
        let newest = (0..rounds)
            .rev()
            .find(|r| (i + r) % 7 == 0 || *r == 0)
            .unwrap();
        assert_eq!(
            db.get(&key(i)).unwrap(),
            Some(format!("v{i}r{newest}").into_bytes()),
            "key {i}"
        );
    }
    assert_eq!(db.get(&key(300)).unwrap(), None);
    assert_eq!(db.get(b"a").unwrap(), None);
    assert_eq!(db.get(b"z").unwrap(), None);
}

/// Bytes that compactions into `level` read from `level` itself: data rewritten within the
/// level (inputs read minus inputs that came from shallower levels).
fn rewritten_within(db: &Db, level: usize) -> u64 {
    let l = &db.stats().levels[level];
    l.compaction_read - l.compaction_moved_in
}

/// Waits (a condition, not a fixed delay) until `cond` holds.
fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let start = std::time::Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "never: {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// The paper's policy (the preset's, PebblesDB §3.4): guards over their table limit go down
/// into the next level's guards, so filling a store moves data down level by level and no
/// compaction rewrites data within a level above the last. The tiered policy merges
/// overflowing guards in place instead. Both read back every key.
#[test]
fn the_paper_policy_never_rewrites_a_level_above_the_last() {
    assert_eq!(
        Options::preset("pebblesdb").unwrap().flsm.policy,
        FlsmPolicy::Paper
    );
    for policy in [FlsmPolicy::Paper, FlsmPolicy::Tiered] {
        let env = Env::new(Arc::new(MemFs::new()));
        let mut o = opts(&env);
        o.flsm.policy = policy;
        // Only the table limit moves data: the level budgets are out of reach.
        o.max_bytes_for_level_base = 1 << 30;
        o.flsm.max_sstables_per_guard = 3;
        // About 20 level-1 guards for 20000 keys, 4x more per level below.
        o.flsm.top_level_bits = 10;
        o.flsm.bit_decrement = 2;
        o.max_background_compactions = 2;
        let last = o.num_levels - 1;
        let db = Db::open("/db", o).unwrap();
        let n = 20_000u32;
        for i in 0..n {
            let k = key(i * 7919 % n);
            db.put(&k, format!("value {i:08} {}", "x".repeat(80)).as_bytes())
                .unwrap();
        }
        db.flush().unwrap();
        match policy {
            FlsmPolicy::Paper => wait_until("data pushed into level 2", || {
                db.stats().levels[2].compaction_moved_in > 0
            }),
            FlsmPolicy::Tiered => wait_until("a level-1 guard merged in place", || {
                rewritten_within(&db, 1) > 0
            }),
        }
        if policy == FlsmPolicy::Paper {
            for level in 1..last {
                assert_eq!(
                    rewritten_within(&db, level),
                    0,
                    "level {level} rewrote its own data: {}",
                    db.stats()
                );
            }
        }
        let mut writer = vec![0u32; n as usize];
        for j in 0..n {
            writer[(j * 7919 % n) as usize] = j;
        }
        for i in 0..n {
            let want = writer[i as usize];
            assert_eq!(
                db.get(&key(i)).unwrap(),
                Some(format!("value {want:08} {}", "x".repeat(80)).into_bytes()),
                "{policy:?} key {i}"
            );
        }
        let mut c = db.cursor(IterOptions::default()).unwrap();
        c.seek_to_first().unwrap();
        let mut seen = 0;
        while c.valid() {
            assert_eq!(c.key(), key(seen).as_slice());
            seen += 1;
            c.next().unwrap();
        }
        assert_eq!(seen, n, "{policy:?}");
        drop(c);
        db.close().unwrap();
    }
}
