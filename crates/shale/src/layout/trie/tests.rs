use std::sync::Arc;
use std::time::{Duration, Instant};

use super::state::{TrieState, container_of_key, garbage_record};
use super::*;
use crate::env::Env;
use crate::key::{ValueKind, make_internal_key};
use crate::options::{LayoutKind, TableKind};
use crate::version::FileMeta;
use crate::{Db, Options};

/// A key whose container at `level` is `c` (the first found among `k0`, `k1`, ...), not in
/// `taken`.
fn key_in(level: usize, c: u64, taken: &mut Vec<String>) -> String {
    let k = (0..)
        .map(|i| format!("k{i}"))
        .find(|k| container_of_key(k.as_bytes(), level) == c && !taken.contains(k))
        .unwrap_or_default();
    taken.push(k.clone());
    k
}

/// Table `number` holding one key, with sequence numbers `number*100 ..= number*100+99`.
fn file(number: u64, key: &str, entries: u64, tombstones: u64) -> FileMeta {
    FileMeta {
        number,
        size: 4096,
        smallest: make_internal_key(key.as_bytes(), number * 100 + 99, ValueKind::Value),
        largest: make_internal_key(key.as_bytes(), number * 100, ValueKind::Value),
        smallest_seq: number * 100,
        largest_seq: number * 100 + 99,
        entries,
        tombstones,
        filter: Default::default(),
    }
}

fn trie(max_sub_levels: usize) -> Trie {
    let mut o = Options::default();
    o.trie.max_sub_levels = max_sub_levels;
    Trie::new(&o)
}

/// A version of 3 levels holding `files` (level, file), with `records`.
fn version(files: Vec<(u32, FileMeta)>, records: Vec<crate::manifest::AxisRecord>) -> Version {
    let v = Version::with_layout(3, Arc::new(TrieState::default()));
    let edit = VersionEdit {
        new_files: files,
        records,
        ..VersionEdit::default()
    };
    v.apply(&edit).unwrap()
}

fn numbers(files: &[Arc<FileMeta>]) -> Vec<u64> {
    files.iter().map(|f| f.number).collect()
}

#[test]
fn containers_hold_their_files_newest_first() {
    let mut taken = Vec::new();
    let a = key_in(1, 3, &mut taken);
    let b = key_in(1, 3, &mut taken);
    let c = key_in(1, 5, &mut taken);
    let v = version(
        vec![
            (1, file(4, &a, 1, 0)),
            (1, file(9, &b, 1, 0)),
            (1, file(6, &c, 1, 0)),
            (0, file(10, "x", 1, 0)),
        ],
        vec![],
    );
    let st = state::state(&v);
    assert_eq!(numbers(st.pile(1, 3)), vec![9, 4]);
    assert_eq!(numbers(st.pile(1, 5)), vec![6]);
    assert_eq!(numbers(st.pile(0, 0)), vec![10]);
    assert!(st.pile(1, 0).is_empty());
    assert_eq!(
        st.containers(1).map(|(c, _)| c).collect::<Vec<_>>(),
        vec![3, 5]
    );
    assert_eq!(st.container(9), Some(3));
}

#[test]
fn a_full_pile_compacts_into_the_next_level_shallowest_first() {
    let mut taken = Vec::new();
    let a = key_in(1, 2, &mut taken);
    let t = trie(3);
    let v = version(
        vec![(0, file(1, "x", 1, 0)), (0, file(2, "y", 1, 0))],
        vec![],
    );
    assert_eq!(t.pick(&v, &PickContext::idle()), None);
    let v = version(
        vec![
            (0, file(1, "x", 1, 0)),
            (0, file(2, "y", 1, 0)),
            (0, file(3, "z", 1, 0)),
            (1, file(4, &a, 1, 0)),
            (1, file(5, &key_in(1, 2, &mut taken), 1, 0)),
            (1, file(6, &key_in(1, 2, &mut taken), 1, 0)),
        ],
        vec![],
    );
    let p = t.pick(&v, &PickContext::idle()).unwrap();
    assert_eq!(p.describe(), "L0[3,2,1] -> L1 (merge)");
    // A busy root table leaves the root alone; the full level-1 container goes next.
    let mut busy = PickContext::idle();
    busy.busy_files.insert(2);
    let p = t.pick(&v, &busy).unwrap();
    assert_eq!(p.describe(), "L1[6,5,4] -> L2 (merge)");
    busy.busy_files.insert(5);
    assert_eq!(t.pick(&v, &busy), None);
}

/// With plans running (two compaction threads), the picker offers the next full pile or
/// collection whose tables no running plan reads: a pile is merged by one plan at a time,
/// and two plans never share an input. A parent's push into a container may run beside
/// that container's own merge (here: the collection of last-level container 0o61 beside
/// its parent 0o6's push): the push lays a new, newer table on the pile and the merge
/// replaces only the tables it read (`docs/designs/lsm-trie.md`, "Compaction threads").
#[test]
fn running_plans_leave_disjoint_piles_to_the_next_pick() {
    let mut taken = Vec::new();
    let t = trie(2);
    let l1 = |c: u64, taken: &mut Vec<String>| key_in(1, c, taken);
    let files = vec![
        (0, file(1, "x", 1, 0)),
        (0, file(2, "y", 1, 0)),
        (1, file(4, &l1(2, &mut taken), 1, 0)),
        (1, file(5, &l1(2, &mut taken), 1, 0)),
        (1, file(7, &l1(6, &mut taken), 1, 0)),
        (1, file(8, &l1(6, &mut taken), 1, 0)),
        (1, file(9, &l1(6, &mut taken), 1, 0)),
        (2, file(10, &key_in(2, 0o61, &mut taken), 100, 0)),
        (2, file(11, &key_in(2, 0o61, &mut taken), 100, 0)),
    ];
    let v = version(files, vec![garbage_record(11, 100)]);
    let mut running: Vec<Plan> = Vec::new();
    let mut picked = Vec::new();
    while let Some(p) = t.pick(&v, &PickContext::of_plans(&running)) {
        picked.push(p.describe());
        running.push(p);
        assert!(running.len() <= 4, "{picked:?}");
    }
    assert_eq!(
        picked,
        vec![
            "L0[2,1] -> L1 (merge)",
            "L1[9,8,7] -> L2 (merge)",
            "L1[5,4] -> L2 (merge)",
            "L2[11,10] -> L2 (merge)",
        ]
    );
    let mut inputs: Vec<u64> = running
        .iter()
        .flat_map(|p| p.input_files().map(|(_, f)| f.number))
        .collect();
    inputs.sort_unstable();
    assert_eq!(
        inputs,
        vec![1, 2, 4, 5, 7, 8, 9, 10, 11],
        "no table in two plans"
    );
    // A plan ends: its pile may be picked again (here the root's).
    running.remove(0);
    let p = t.pick(&v, &PickContext::of_plans(&running)).unwrap();
    assert_eq!(p.describe(), "L0[2,1] -> L1 (merge)");
}

#[test]
fn the_last_level_is_collected_by_its_garbage_estimate() {
    let mut taken = Vec::new();
    let a = key_in(2, 9, &mut taken);
    let b = key_in(2, 9, &mut taken);
    let lone = key_in(2, 10, &mut taken);
    let t = trie(8);
    let files = || {
        vec![
            (2, file(1, &a, 100, 0)),
            (2, file(2, &b, 100, 0)),
            (2, file(3, &lone, 100, 90)),
        ]
    };
    // No garbage known: nothing to do (a lone table is never collected).
    assert_eq!(
        t.pick(&version(files(), vec![]), &PickContext::idle()),
        None
    );
    // 80 of 200 entries: below the 50% default.
    let v = version(files(), vec![garbage_record(2, 80)]);
    assert_eq!(t.pick(&v, &PickContext::idle()), None);
    let v = version(files(), vec![garbage_record(2, 100)]);
    let p = t.pick(&v, &PickContext::idle()).unwrap();
    assert_eq!(p.describe(), "L2[2,1] -> L2 (merge)");
    // The estimate follows its table: gone with it, kept in snapshots.
    let st = state::state(&v);
    assert_eq!(st.garbage(2), 100);
    let mut out = Vec::new();
    st.snapshot(&mut out);
    assert_eq!(out, vec![garbage_record(2, 100)]);
    let mut del = VersionEdit::default();
    del.deleted_files.push((2, 2));
    let after = v.apply(&del).unwrap();
    assert_eq!(state::state(&after).garbage(2), 0);
}

#[test]
fn manual_compaction_pushes_every_level_then_merges_the_deepest_in_place() {
    let t = trie(8);
    let mut taken = Vec::new();
    let a = key_in(1, 1, &mut taken);
    let v = version(
        vec![(0, file(1, "x", 1, 0)), (1, file(2, &a, 1, 0))],
        vec![],
    );
    assert_eq!(t.range_steps(&v, None, None), vec![0, BOTTOM_STEP]);
    assert_eq!(
        t.pick_range(&v, 0, None, None).unwrap().describe(),
        "L0[1] -> L1 (merge)"
    );
    assert_eq!(
        t.pick_range(&v, BOTTOM_STEP, None, None)
            .unwrap()
            .describe(),
        "L1[2] -> L1 (merge)"
    );
    let root_only = version(vec![(0, file(1, "x", 1, 0))], vec![]);
    assert_eq!(t.range_steps(&root_only, None, None), vec![0, BOTTOM_STEP]);
    assert!(
        t.range_steps(&version(vec![], vec![]), None, None)
            .is_empty()
    );
}

// ---------------------------------------------------------------------------------------
// Through a store

fn options(env: &Env) -> Options {
    let mut o = Options::default().with_env(env.clone());
    o.layout = LayoutKind::Trie;
    o.table_format = TableKind::HTable;
    o.num_levels = 3;
    o.write_buffer_size = 64 * 1024;
    o.trie.max_sub_levels = 2;
    o.trie.gc_sample_bits = 0;
    o.table.bloom_bits_per_key = 16;
    o
}

fn wait_until(db: &Db, what: &str, f: impl Fn(&Db) -> bool) {
    let start = Instant::now();
    while !f(db) {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "timed out waiting for {what}: {:?}\n{:#?}",
            db.property("shale.levels"),
            db.live_files()
                .iter()
                .map(|f| (f.level, f.number, f.entries, f.seq_range))
                .collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn fill(db: &Db, round: u32, keys: u32) {
    for i in 0..keys {
        db.put(
            format!("key{i:05}").as_bytes(),
            format!("r{round}-{i}").as_bytes(),
        )
        .unwrap();
    }
    db.flush().unwrap();
}

#[test]
fn compaction_splits_a_pile_into_the_children_and_never_rewrites_them() {
    let env = Env::memory();
    let mut o = options(&env);
    o.trie.max_sub_levels = 3;
    let db = Db::open("/trie", o).unwrap();
    let root_empty = |db: &Db| db.live_files().iter().all(|f| f.level != 0);
    for round in 0..3 {
        fill(&db, round, 500);
    }
    wait_until(&db, "the root compaction", root_empty);
    let first: Vec<_> = db.live_files();
    assert!(first.iter().all(|f| f.level == 1));
    assert!(first.len() <= 8 && first.len() >= 6, "{}", first.len());
    for f in &first {
        assert_eq!(
            container_of_key(&f.smallest_key, 1),
            container_of_key(&f.largest_key, 1),
            "a level-1 table holds keys of one container"
        );
    }
    // The next root compaction lays a new table on each child's pile; the first tables
    // stay as they were (two tables are below the limit of three).
    for round in 3..6 {
        fill(&db, round, 500);
    }
    wait_until(&db, "the second root compaction", root_empty);
    let now = db.live_files();
    for f in &first {
        let c = container_of_key(&f.smallest_key, 1);
        let pile: Vec<_> = now
            .iter()
            .filter(|g| g.level == 1 && container_of_key(&g.smallest_key, 1) == c)
            .collect();
        assert_eq!(pile.len(), 2, "container {c}");
        assert!(
            pile.iter()
                .any(|g| g.number == f.number && g.size == f.size)
        );
        assert!(
            pile.iter()
                .any(|g| g.number > f.number && g.seq_range.0 > f.seq_range.1)
        );
    }
    for i in 0..500u32 {
        let got = db.get(format!("key{i:05}").as_bytes()).unwrap();
        assert_eq!(got, Some(format!("r5-{i}").into_bytes()));
    }
    db.close().unwrap();
}

#[test]
fn tombstones_and_snapshots_hold_across_levels_and_collection() {
    let env = Env::memory();
    let db = Db::open("/trie", options(&env)).unwrap();
    fill(&db, 0, 300);
    db.compact_range(None, None).unwrap();
    let snap = db.snapshot();
    for i in 0..300u32 {
        let k = format!("key{i:05}");
        if i % 2 == 0 {
            db.delete(k.as_bytes()).unwrap();
        } else {
            db.put(k.as_bytes(), b"new").unwrap();
        }
    }
    db.flush().unwrap();
    for round in 0..3 {
        db.compact_range(None, None).unwrap();
        for i in 0..300u32 {
            let k = format!("key{i:05}");
            let want = (i % 2 == 1).then(|| b"new".to_vec());
            assert_eq!(db.get(k.as_bytes()).unwrap(), want, "round {round} {k}");
            assert_eq!(
                db.get_at(k.as_bytes(), &snap).unwrap(),
                Some(format!("r0-{i}").into_bytes()),
                "round {round} snapshot {k}"
            );
        }
    }
    drop(snap);
    db.compact_range(None, None).unwrap();
    let entries: u64 = db.live_files().iter().map(|f| f.entries).sum();
    let tombstones: u64 = db.live_files().iter().map(|f| f.tombstones).sum();
    assert_eq!((entries, tombstones), (150, 0));
    db.close().unwrap();
    let db = Db::open("/trie", options(&env)).unwrap();
    assert_eq!(db.get(b"key00001").unwrap(), Some(b"new".to_vec()));
    assert_eq!(db.get(b"key00002").unwrap(), None);
}

#[test]
fn overwrites_reaching_the_last_level_are_collected() {
    let env = Env::memory();
    let db = Db::open("/trie", options(&env)).unwrap();
    // The same keys again and again: every sub-level added to the last level shadows the
    // older ones, so the estimate passes the ratio and collection merges the piles.
    for round in 0..12 {
        fill(&db, round, 400);
        // Each round's compactions settle before the next flush, so piles fill in step.
        wait_until(&db, "the round's compactions", |db| {
            let piles = db
                .property("shale.trie-piles-at-level1")
                .unwrap_or_default();
            db.live_files().iter().filter(|f| f.level == 0).count() < 2
                && piles.lines().all(|l| l.ends_with(" 1"))
        });
    }
    // Twelve flushes: six root compactions, three of each level-1 container, so three
    // sub-levels reach each last-level container; each one past the first doubles the
    // versions of its keys (a garbage ratio of one half), so the pile is collected.
    wait_until(&db, "collection", |db| {
        let files = db.live_files();
        files.iter().all(|f| f.level == 2) && files.iter().map(|f| f.entries).sum::<u64>() == 400
    });
    assert!(db.live_files().len() <= 64);
    for i in 0..400u32 {
        let got = db.get(format!("key{i:05}").as_bytes()).unwrap();
        assert_eq!(got, Some(format!("r11-{i}").into_bytes()));
    }
    // After collection: missing keys read no bucket (but for a rare false positive).
    let io = Arc::clone(env.io());
    let data = || io.block_reads(crate::env::ReadCause::Get, crate::env::BlockKind::Data);
    let before = data();
    for i in 400..1400u32 {
        assert_eq!(db.get(format!("key{i:05}").as_bytes()).unwrap(), None);
    }
    assert!(data() - before <= 10, "{} buckets", data() - before);
}

/// Wait until no pile above the last level is full (what the compactions leave).
fn settled(db: &Db, levels: usize, max: usize) {
    wait_until(db, "the compactions", |db| {
        (0..levels - 1).all(|l| {
            db.property(&format!("shale.trie-piles-at-level{l}"))
                .unwrap_or_default()
                .lines()
                .all(|line| {
                    line.rsplit(' ')
                        .next()
                        .and_then(|n| n.parse::<usize>().ok())
                        .is_some_and(|n| n < max)
                })
        })
    });
}

/// The filter blocks a get of `key` reads with no filter in memory and no block cache:
/// one per cluster it must ask, `ceil(pile / max)` on each level (a table's cluster covers
/// it and up to `max - 1` older tables of its pile).
fn clusters_on_path(db: &Db, key: &[u8], max: usize) -> u64 {
    let files = db.live_files();
    let levels = files.iter().map(|f| f.level + 1).max().unwrap_or(0);
    (0..levels)
        .map(|l| {
            let c = container_of_key(key, l);
            let pile = files
                .iter()
                .filter(|f| f.level == l && container_of_key(&f.smallest_key, l) == c)
                .count();
            pile.div_ceil(max) as u64
        })
        .sum()
}

#[test]
fn clustered_filters_read_one_block_per_level_and_miss_no_key() {
    use crate::env::{BlockKind, ReadCause};
    for pinned in [64, 0] {
        let env = Env::memory();
        let mut o = options(&env);
        o.trie.max_sub_levels = 3;
        o.trie.pinned_filter_levels = pinned;
        o.block_cache_bytes = 0;
        let levels = o.num_levels;
        let db = Db::open("/trie", o.clone()).unwrap();
        // Distinct keys: nothing is garbage, every level keeps its piles.
        let key = |round: u32, i: u32| format!("r{round:02}-{i:04}");
        for round in 0..14 {
            for i in 0..300 {
                db.put(key(round, i).as_bytes(), format!("v{round}-{i}").as_bytes())
                    .unwrap();
            }
            db.flush().unwrap();
            settled(&db, levels, 3);
        }
        let files = db.live_files();
        assert!(files.iter().any(|f| f.level == 0), "{pinned}");
        assert!(files.iter().any(|f| f.level == 1), "{pinned}");
        assert!(files.iter().any(|f| f.level == 2), "{pinned}");
        let io = Arc::clone(env.io());
        let reads = |k: BlockKind| io.block_reads(ReadCause::Get, k);
        let mut open = Some(db);
        for reopened in [false, true] {
            if reopened && let Some(db) = open.take() {
                db.close().unwrap();
                open = Some(Db::open("/trie", o.clone()).unwrap());
            }
            let Some(db) = open.as_ref() else { break };
            // Every key is found, at every level (no false negative), one bucket each.
            let data = reads(BlockKind::Data);
            for round in 0..14 {
                for i in 0..300 {
                    assert_eq!(
                        db.get(key(round, i).as_bytes()).unwrap(),
                        Some(format!("v{round}-{i}").into_bytes()),
                        "pinned {pinned} reopened {reopened}"
                    );
                }
            }
            let found = reads(BlockKind::Data) - data;
            assert!(
                (4200..4200 + 42).contains(&found),
                "{found} buckets for 4200 gets"
            );
            // Missing keys: no data block (but for a rare false positive); the filter
            // blocks are one per cluster on the key's path, or none once in memory.
            let (data, filter) = (reads(BlockKind::Data), reads(BlockKind::Filter));
            let mut want_filter = 0;
            for i in 0..1000 {
                let k = format!("missing-{i}");
                assert_eq!(db.get(k.as_bytes()).unwrap(), None);
                want_filter += clusters_on_path(db, k.as_bytes(), 3);
            }
            let data = reads(BlockKind::Data) - data;
            let filter = reads(BlockKind::Filter) - filter;
            assert!(data <= 10, "{data} data blocks for 1000 missing keys");
            if pinned == 0 {
                assert_eq!(filter, want_filter, "one block per cluster on the path");
                assert!(filter <= 1000 * levels as u64 + 1000, "{filter}");
            } else {
                assert_eq!(filter, 0, "the clusters were loaded by the gets above");
            }
        }
    }
}

#[test]
fn scans_and_size_estimates_are_unsupported() {
    let env = Env::memory();
    let db = Db::open("/trie", options(&env)).unwrap();
    db.put(b"a", b"1").unwrap();
    assert!(!db.supports_scans());
    assert!(matches!(
        db.iter(crate::IterOptions::default()),
        Err(crate::Error::Unsupported(_))
    ));
    assert!(matches!(
        db.cursor(crate::IterOptions::default()),
        Err(crate::Error::Unsupported(_))
    ));
    db.flush().unwrap();
    assert!(matches!(
        db.approximate_sizes(&[(b"a", b"z")]),
        Err(crate::Error::Unsupported(_))
    ));
    assert_eq!(db.get(b"a").unwrap(), Some(b"1".to_vec()));
}

/// Two compaction threads (the preset's): two writers overwrite and delete their keys
/// round after round while two readers get them and flushes, pushes at every level and
/// collections of the last level run two at a time. A get returns the key as of a round at
/// least as new as the last one its writer finished; at the end, and after a reopen, every
/// key holds its last round's value.
#[test]
fn two_compaction_threads_lose_no_write_and_show_no_stale_value() {
    use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
    const KEYS: u32 = 300;
    const ROUNDS: u32 = 40;
    let env = Env::memory();
    let mut o = options(&env);
    o.max_background_compactions = 2;
    o.write_buffer_size = 16 * 1024;
    let db = Db::open("/trie", o.clone()).unwrap();
    let key = |w: u32, i: u32| format!("w{w}-{i:04}").into_bytes();
    // Round `q`'s state of key `i`: deleted every seventh round for a third of the keys.
    let deleted = |q: u32, i: u32| q % 7 == 6 && i.is_multiple_of(3);
    let value = |q: u32, i: u32| {
        let mut v = format!("r{q:03}-{i}-").into_bytes();
        v.resize(v.len() + (i % 50) as usize, b'a' + (q % 26) as u8);
        v
    };
    // Rounds each writer finished.
    let done = [AtomicU32::new(0), AtomicU32::new(0)];
    let stop = AtomicBool::new(false);
    let peak = AtomicUsize::new(0);
    let check = |w: u32, i: u32, finished: u32, got: Option<Vec<u8>>| match got {
        Some(v) => {
            let q: u32 = std::str::from_utf8(&v[1..4]).unwrap().parse().unwrap();
            assert!(
                q + 1 >= finished,
                "key {w}/{i}: round {q} read after round {finished}"
            );
            assert_eq!(v, value(q, i), "key {w}/{i}");
            assert!(!deleted(q, i));
        }
        None => assert!(
            finished == 0 || (finished - 1..ROUNDS).any(|q| deleted(q, i)),
            "key {w}/{i} missing after round {finished}"
        ),
    };
    /// Stops the readers and the watcher however the scope's body ends (a failed wait
    /// included), so a failure fails the test instead of hanging it.
    struct StopOnDrop<'a>(&'a AtomicBool);
    impl Drop for StopOnDrop<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Release);
        }
    }
    std::thread::scope(|s| {
        let _stop = StopOnDrop(&stop);
        let writers: Vec<_> = (0..2u32)
            .map(|w| {
                let (db, done) = (&db, &done);
                s.spawn(move || {
                    for q in 0..ROUNDS {
                        for i in 0..KEYS {
                            if deleted(q, i) {
                                db.delete(&key(w, i)).unwrap();
                            } else {
                                db.put(&key(w, i), &value(q, i)).unwrap();
                            }
                        }
                        done[w as usize].store(q + 1, Ordering::Release);
                    }
                })
            })
            .collect();
        for r in 0..2u32 {
            let (db, done, stop) = (&db, &done, &stop);
            s.spawn(move || {
                let mut n = r;
                while !stop.load(Ordering::Acquire) {
                    let (w, i) = (n % 2, n.wrapping_mul(7919) % KEYS);
                    n = n.wrapping_add(1);
                    let finished = done[w as usize].load(Ordering::Acquire);
                    check(w, i, finished, db.get(&key(w, i)).unwrap());
                }
            });
        }
        let (db, stop, peak) = (&db, &stop, &peak);
        s.spawn(move || {
            while !stop.load(Ordering::Acquire) {
                let n = db
                    .property("shale.num-running-compactions")
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0);
                peak.fetch_max(n, Ordering::Relaxed);
                std::thread::yield_now();
            }
        });
        for h in writers {
            h.join().unwrap();
        }
        db.flush().unwrap();
        settled(db, 3, 2);
    });
    assert!(
        db.live_files().iter().any(|f| f.level == 2),
        "the data reached the last level"
    );
    assert!(
        peak.load(Ordering::Relaxed) >= 2,
        "two compactions ran at once ({} seen)",
        peak.load(Ordering::Relaxed)
    );
    let mut open = Some(db);
    for reopened in [false, true] {
        if reopened && let Some(db) = open.take() {
            db.close().unwrap();
            open = Some(Db::open("/trie", o.clone()).unwrap());
        }
        let Some(db) = open.as_ref() else { break };
        for w in 0..2 {
            for i in 0..KEYS {
                let got = db.get(&key(w, i)).unwrap();
                assert_eq!(
                    got,
                    Some(value(ROUNDS - 1, i)),
                    "{w}/{i} reopened {reopened}"
                );
            }
        }
    }
}
