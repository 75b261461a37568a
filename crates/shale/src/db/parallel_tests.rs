//! Compactions really run side by side: proved with the test gate of `background`, which
//! holds a picked plan until a second one is in flight (or until no second one can come,
//! which fails the test instead of hanging it).

use super::Db;
use super::background::gate::Gate;
use crate::env::Env;
use crate::options::Options;

fn options(workers: usize) -> Options {
    let mut o = Options::default().with_env(Env::memory());
    o.max_background_compactions = workers;
    // Large enough that only the test's own flushes make tables.
    o.write_buffer_size = 1 << 20;
    // One level-1 file: only one level-1 plan can exist at a time.
    o.target_file_size = 1 << 20;
    o.max_bytes_for_level_base = 16 << 10;
    o.level0_compaction_trigger = 2;
    o
}

fn key(prefix: char, i: usize) -> Vec<u8> {
    format!("{prefix}{i:05}").into_bytes()
}

/// Build a store whose level 1 (keys `z…`) is over its limit, so a worker moves it down
/// and is held at the gate; then flush two level-0 tables of keys `a…`, disjoint from it.
/// Returns the gate's peak of compactions running at once.
fn peak_with(workers: usize) -> usize {
    let db = Db::open("/db", options(workers)).unwrap();
    let inner = &db.inner();
    inner.bg.lock().gate = Some(Gate::default());
    for i in 0..400 {
        db.put(&key('z', i), &[7u8; 100]).unwrap();
    }
    // Level 0 -> level 1 by hand: about 44 KiB in level 1, its limit is 16 KiB.
    db.compact_range(None, None).unwrap();
    for round in 0..2 {
        for i in 0..50 {
            db.put(&key('a', round * 50 + i), &[round as u8; 100])
                .unwrap();
        }
        db.flush().unwrap();
    }
    // Every table is in place: from now on a worker that finds nothing releases the gate.
    let peak = {
        let mut bg = inner.bg.lock();
        if let Some(g) = bg.gate.as_mut() {
            g.ready = true;
        }
        bg.compaction_wanted = true;
        inner.bg_cv.notify_all();
        loop {
            match &bg.gate {
                Some(g) if g.released => break g.peak,
                _ => inner.bg_cv.wait(&mut bg),
            }
        }
    };
    db.compact_range(None, None).unwrap();
    for i in 0..400 {
        assert_eq!(
            db.get(&key('z', i)).unwrap().as_deref(),
            Some(&[7u8; 100][..])
        );
    }
    for i in 0..100 {
        let v = [(i / 50) as u8; 100];
        assert_eq!(db.get(&key('a', i)).unwrap().as_deref(), Some(&v[..]));
    }
    assert!(db.stats().compactions >= 2);
    assert_levels_disjoint(&db);
    db.close().unwrap();
    peak
}

/// Every level >= 1 holds disjoint files in key order.
fn assert_levels_disjoint(db: &Db) {
    let v = db.inner().super_version().version.clone();
    for level in 1..v.num_levels() {
        for pair in v.level(level).windows(2) {
            assert!(
                pair[0].largest_user_key() < pair[1].smallest_user_key(),
                "L{level}: files {} and {} overlap",
                pair[0].number,
                pair[1].number
            );
        }
    }
}

#[test]
fn a_level0_compaction_runs_beside_a_deeper_one() {
    assert_eq!(peak_with(2), 2);
}

#[test]
fn one_worker_runs_one_compaction_at_a_time() {
    // The same workload with one worker: the gate sees one plan, which shows the check
    // above can fail.
    assert_eq!(peak_with(1), 1);
}

#[test]
fn manual_compaction_waits_for_a_running_plan() {
    let db = Db::open("/db", options(2)).unwrap();
    let inner = &db.inner();
    inner.bg.lock().gate = Some(Gate::default());
    for i in 0..400 {
        db.put(&key('z', i), &[7u8; 100]).unwrap();
    }
    db.compact_range(None, None).unwrap();
    // A worker now holds level 1 -> 2 at the gate (the test never says it is ready).
    {
        let mut bg = inner.bg.lock();
        while bg.running.is_empty() {
            inner.bg_cv.wait(&mut bg);
        }
    }
    for i in 0..100 {
        db.put(&key('a', i), &[1u8; 100]).unwrap();
    }
    // This manual compaction stops new plans and waits for the held one: the gate lets it go
    // because of the manual compaction, with one plan running.
    db.compact_range(None, None).unwrap();
    {
        let bg = inner.bg.lock();
        let gate = bg.gate.as_ref().unwrap();
        assert!(gate.released);
        assert_eq!(gate.peak, 1);
    }
    let v = inner.super_version().version.clone();
    assert!(v.level(0).is_empty());
    drop(v);
    assert_levels_disjoint(&db);
    for i in 0..400 {
        assert_eq!(
            db.get(&key('z', i)).unwrap().as_deref(),
            Some(&[7u8; 100][..])
        );
    }
    for i in 0..100 {
        assert_eq!(
            db.get(&key('a', i)).unwrap().as_deref(),
            Some(&[1u8; 100][..])
        );
    }
    db.close().unwrap();
}

/// A store is settled only once every compaction has deleted its inputs: with a compaction
/// held between its commit and the deletion, and the other worker idle (its pick found
/// nothing), the store reports a compaction running; released, the wait returns with no
/// obsolete table left in the directory.
#[test]
fn settled_waits_for_a_compactions_inputs_to_be_deleted() {
    let db = Db::open("/db", options(2)).unwrap();
    let inner = &db.inner();
    inner.bg.lock().gate = Some(Gate {
        released: true,
        hold_sweep: true,
        ..Gate::default()
    });
    // Two overlapping level-0 tables: the trigger is 2, so one worker merges them into
    // level 1 (a merge: its inputs become obsolete).
    for round in 0..2 {
        for i in 0..50 {
            db.put(&key('a', i), &[round as u8; 100]).unwrap();
        }
        db.flush().unwrap();
    }
    {
        let mut bg = inner.bg.lock();
        while !bg.gate.as_ref().is_some_and(|g| g.sweep_held) || bg.compaction_wanted {
            inner.bg_cv.wait(&mut bg);
        }
    }
    // Committed: level 0 is empty, but its two tables are still on disk.
    assert_eq!(
        db.property("shale.num-files-at-level0").as_deref(),
        Some("0")
    );
    assert_eq!(
        db.property("shale.num-running-compactions").as_deref(),
        Some("1")
    );
    let tables = |db: &Db| {
        let inner = db.inner();
        let mut n = inner
            .env
            .fs()
            .list_dir(std::path::Path::new("/db"))
            .unwrap()
            .into_iter()
            .filter(|n| n.ends_with(".sst"))
            .collect::<Vec<_>>();
        n.sort();
        n
    };
    let live = db.live_files().len();
    assert!(tables(&db).len() > live, "{:?}", tables(&db));
    {
        let mut bg = inner.bg.lock();
        if let Some(g) = bg.gate.as_mut() {
            g.hold_sweep = false;
        }
        inner.bg_cv.notify_all();
    }
    db.wait_for_compactions().unwrap();
    assert_eq!(tables(&db).len(), db.live_files().len());
    for i in 0..50 {
        assert_eq!(
            db.get(&key('a', i)).unwrap().as_deref(),
            Some(&[1u8; 100][..])
        );
    }
    db.close().unwrap();
}
