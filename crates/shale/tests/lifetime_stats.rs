//! `Stats::lifetime`: counters since the store was created, kept in the MANIFEST across
//! restarts (issue 18, "persistent statistics").

#![allow(clippy::unwrap_used, reason = "a test's failure is a test failure")]

use std::sync::Arc;

use shale::env::mem::MemFs;
use shale::env::{Env, WriteCause};
use shale::{Db, Options};

fn options(design: &str, env: &Env) -> Options {
    let mut o = Options::preset(design).unwrap().with_env(env.clone());
    o.write_buffer_size = 64 * 1024;
    o
}

fn put_n(db: &Db, from: u32, n: u32) {
    for i in from..from + n {
        db.put(format!("key{i:06}").as_bytes(), &[b'v'; 100])
            .unwrap();
    }
}

#[test]
fn lifetime_counters_survive_clean_restarts() {
    for design in Options::available_presets() {
        let env = Env::memory();
        let db = Db::open("/db", options(design, &env)).unwrap();
        put_n(&db, 0, 1000);
        db.flush().unwrap();
        let first = db.stats().lifetime;
        assert_eq!(first.user_ops_written, 1000, "{design}");
        db.close().unwrap();

        let db = Db::open("/db", options(design, &env)).unwrap();
        let s = db.stats();
        assert_eq!(
            s.user_ops_written, 0,
            "{design}: this process wrote nothing yet"
        );
        assert_eq!(s.lifetime.user_ops_written, 1000, "{design}");
        assert_eq!(
            s.lifetime.user_bytes_written, first.user_bytes_written,
            "{design}"
        );
        assert!(s.lifetime.flushes >= 1, "{design}");
        // Writes left in the log at a clean close are counted too.
        put_n(&db, 1000, 500);
        db.close().unwrap();

        let db = Db::open("/db", options(design, &env)).unwrap();
        let l = db.stats().lifetime;
        assert_eq!(l.user_ops_written, 1500, "{design}");
        let flushed = |l: &shale::LifetimeStats| {
            l.written
                .iter()
                .find(|(c, _)| *c == WriteCause::Flush)
                .map_or(0, |&(_, n)| n)
        };
        assert!(flushed(&l) >= flushed(&first), "{design}");
        assert!(l.write_amplification() > 0.5, "{design}: {l:?}");
        db.close().unwrap();
    }
}

/// After a crash the counters are those of the last commit: never more than was written,
/// and no less than what a flush committed.
#[test]
fn after_a_crash_the_last_committed_counts_remain() {
    let mem = MemFs::new();
    let env = Env::new(Arc::new(mem.clone()));
    let db = Db::open("/db", options("leveldb", &env)).unwrap();
    put_n(&db, 0, 800);
    db.flush().unwrap();
    put_n(&db, 800, 200);
    let image = mem.snapshot_durable();
    drop(db);
    let db = Db::open("/db", options("leveldb", &Env::new(Arc::new(image)))).unwrap();
    let l = db.stats().lifetime;
    assert!(
        (800..=1000).contains(&l.user_ops_written),
        "{}",
        l.user_ops_written
    );
    db.close().unwrap();
}
