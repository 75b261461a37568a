//! Compaction reclaims expired keys (issue 24): keys set with PX that expire and that no
//! client touches leave the store's files at the next compaction, through the compaction
//! filter the server installs. Time is a `ManualClock` the test moves; the active sweep is
//! off, so nothing but compaction removes them.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test's failure is a panic"
)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{TempDir, TestServer, Val};
use shale::IterOptions;
use shale::ttl::ManualClock;

const T0: u64 = 1_700_000_000_000;

/// Engine keys of the server's data (prefix `k`), and the entries in the store's files.
fn raw(srv: &TestServer) -> (Vec<Vec<u8>>, u64) {
    let ks = srv.keyspace.upgrade().expect("server running");
    let keys = ks
        .db()
        .iter(IterOptions::prefix(b"k".to_vec()))
        .unwrap()
        .map(|r| r.unwrap().0)
        .collect();
    let entries = ks.db().live_files().iter().map(|f| f.entries).sum();
    (keys, entries)
}

fn compact(srv: &TestServer) {
    let ks = srv.keyspace.upgrade().expect("server running");
    ks.db().compact_range(None, None).unwrap();
}

#[test]
fn compaction_drops_expired_keys_nobody_touched() {
    for design in ["leveldb", "pebblesdb", "wisckey"] {
        let dir = TempDir::new(&format!("reclaim-{design}"));
        let clock = Arc::new(ManualClock::new(T0));
        let srv = TestServer::start_with(dir.path(), |c| {
            c.design = Some(design.to_string());
            c.expire_scan_rate = 0;
            c.clock = Arc::clone(&clock) as _;
        });
        let mut c = srv.client();
        // Values large enough that the value log separates some of them.
        let big = "x".repeat(700);
        for i in 0..300 {
            let v = if i % 2 == 0 { big.as_str() } else { "short" };
            assert_eq!(
                c.cmd(&["SET", &format!("t{i:03}"), v, "PX", "1000"]),
                Val::ok()
            );
        }
        for i in 0..50 {
            assert_eq!(c.cmd(&["SET", &format!("p{i:03}"), &big]), Val::ok());
            assert_eq!(
                c.cmd(&["SET", &format!("h{i:03}"), "v", "PX", "3600000"]),
                Val::ok()
            );
        }
        assert_eq!(c.cmd(&["DBSIZE"]), Val::Int(400));
        compact(&srv);
        let (keys, _) = raw(&srv);
        assert_eq!(keys.len(), 400, "{design}: nothing has expired yet");

        // Past the PX deadline. No client reads the expired keys, the sweep is off: they
        // are still in the store until a compaction writes them.
        clock.advance(Duration::from_millis(1000));
        let (keys, before) = raw(&srv);
        assert_eq!(keys.len(), 400, "{design}: the engine still holds them");
        assert!(before >= 401, "{design}: {before} entries in the files");
        compact(&srv);
        let (keys, after) = raw(&srv);
        assert_eq!(keys.len(), 100, "{design}: the expired keys are gone");
        assert!(keys.iter().all(|k| !k.starts_with(b"kt")), "{design}");
        // The 100 live keys and the format marker; no tombstone was needed at the base.
        assert_eq!(
            after, 101,
            "{design}: entries in the files after compaction"
        );

        // The server agrees, and never counted a deletion of its own.
        assert_eq!(c.cmd(&["DBSIZE"]), Val::Int(100));
        assert_eq!(c.cmd(&["GET", "t000"]), Val::Null);
        assert_eq!(c.cmd(&["GET", "p049"]), Val::bulk(&big));
        assert_eq!(c.cmd(&["PTTL", "h000"]), Val::Int(3_599_000));
        let info = c.cmd(&["INFO", "stats"]).text();
        assert!(info.contains("expired_keys:0"), "{info}");

        // An hour on, the rest of the expiring keys go too, across a restart.
        drop(c);
        srv.stop();
        clock.advance(Duration::from_secs(3600));
        let srv = TestServer::start_with(dir.path(), |c| {
            c.expire_scan_rate = 0;
            c.clock = Arc::clone(&clock) as _;
        });
        compact(&srv);
        let (keys, after) = raw(&srv);
        assert_eq!(keys.len(), 50, "{design}");
        assert_eq!(after, 51, "{design}");
        srv.stop();
    }
}
