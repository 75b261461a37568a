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
    let inner = &db.inner;
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
    db.close().unwrap();
    peak
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
