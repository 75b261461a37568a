//! `Db::wait_for_compactions` (RocksDB's `WaitForCompact`): it returns once the background
//! has nothing left to do, on every design.

#![allow(clippy::unwrap_used, reason = "a test's failure is a test failure")]

use shale::env::Env;
use shale::{Db, Options};

fn settled(db: &Db) -> bool {
    [
        "shale.mem-table-flush-pending",
        "shale.compaction-pending",
        "shale.num-running-compactions",
    ]
    .iter()
    .all(|p| db.property(p).as_deref() == Some("0"))
}

#[test]
fn returns_when_nothing_runs_or_is_left_to_start() {
    for design in Options::available_presets() {
        let env = Env::memory();
        let mut o = Options::preset(design).unwrap().with_env(env.clone());
        o.write_buffer_size = 32 * 1024;
        o.max_immutable_memtables = 4;
        let db = Db::open("/db", o).unwrap();
        // Enough small memtables that flushes and compactions are still running or pending
        // when the writes end.
        for i in 0..6000u32 {
            let k = format!("key{:06}", i.wrapping_mul(7919) % 6000);
            db.put(k.as_bytes(), &[b'v'; 100]).unwrap();
        }
        db.wait_for_compactions().unwrap();
        assert!(settled(&db), "{design}: {:?}", db.property("shale.levels"));
        let before = db.stats().lifetime;
        // Settled means nothing starts by itself: a second wait has nothing to wait for,
        // and no flush or compaction happened in between.
        db.wait_for_compactions().unwrap();
        let after = db.stats().lifetime;
        assert_eq!(
            (before.flushes, before.compactions),
            (after.flushes, after.compactions),
            "{design}"
        );
        // A flush of the memtable in use starts more work; the wait covers it too.
        db.flush().unwrap();
        db.wait_for_compactions().unwrap();
        assert!(settled(&db), "{design}");
        for i in 0..6000u32 {
            let k = format!("key{i:06}");
            assert!(db.get(k.as_bytes()).unwrap().is_some(), "{design}: {k}");
        }
        db.close().unwrap();
    }
}
