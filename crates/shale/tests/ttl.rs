//! Expiring values (`shale::ttl::TtlDb`): an expired entry is never returned, by any read,
//! before or after compaction; compaction removes it from the files; the rest survives; the
//! store's record keeps plain and expiring stores apart. Time is a `ManualClock`.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "a test helper's failure is a test failure"
)]

use std::sync::Arc;
use std::time::Duration;

use shale::env::Env;
use shale::ttl::{ManualClock, NEVER, TtlBatch, TtlDb, TtlOptions};
use shale::{Db, Error, IterOptions, Options};

const T0: u64 = 1_700_000_000_000;

fn options(design: &str, env: &Env) -> Options {
    let mut o = Options::preset(design).unwrap();
    o.env = env.clone();
    o.write_buffer_size = 16 * 1024;
    o.target_file_size = 8 * 1024;
    o.max_bytes_for_level_base = 32 * 1024;
    o.min_separated_value_size = 64;
    o.vlog_segment_size = 16 * 1024;
    o.vlog_gc = false;
    o.flsm.top_level_bits = 5;
    o.flsm.bit_decrement = 1;
    o
}

fn ttl_options(clock: &Arc<ManualClock>) -> TtlOptions {
    TtlOptions {
        default_ttl: None,
        clock: Arc::clone(clock) as _,
    }
}

/// Long values for some keys, so the value log separates them.
fn value(i: usize) -> Vec<u8> {
    let mut v = format!("value-{i}-").into_bytes();
    if i.is_multiple_of(3) {
        v.resize(300, b'x');
    }
    v
}

fn entries_in_files(db: &TtlDb) -> u64 {
    db.db().live_files().iter().map(|f| f.entries).sum()
}

fn keys(db: &TtlDb, opts: IterOptions, reverse: bool) -> Vec<Vec<u8>> {
    if !db.db().supports_scans() {
        // A store that answers point reads only: every key this test writes, by gets.
        let mut out: Vec<Vec<u8>> = (0..200)
            .map(|i| format!("e{i:03}"))
            .chain((0..100).flat_map(|i| [format!("h{i:03}"), format!("p{i:03}")]))
            .map(String::into_bytes)
            .filter(|k| opts.prefix.as_ref().is_none_or(|p| k.starts_with(p)))
            .filter(|k| {
                match &opts.snapshot {
                    Some(s) => db.get_at(k, s),
                    None => db.get(k),
                }
                .unwrap()
                .is_some()
            })
            .collect();
        out.sort();
        return out;
    }
    let it = db.iter(opts).unwrap();
    let mut out: Vec<Vec<u8>> = if reverse {
        it.rev().map(|r| r.unwrap().0).collect()
    } else {
        it.map(|r| r.unwrap().0).collect()
    };
    if reverse {
        out.reverse();
    }
    out
}

#[test]
fn expired_entries_are_never_returned_and_compaction_removes_them() {
    for design in Options::available_presets() {
        let env = Env::memory();
        let clock = Arc::new(ManualClock::new(T0));
        let db = TtlDb::open("/t", options(design, &env), ttl_options(&clock)).unwrap();
        // 200 keys expire in 10 s, 100 never, 100 in an hour.
        for i in 0..200 {
            let k = format!("e{i:03}");
            db.put_with_ttl(k.as_bytes(), &value(i), Duration::from_secs(10))
                .unwrap();
        }
        for i in 0..100 {
            db.put(format!("p{i:03}").as_bytes(), &value(i)).unwrap();
            db.put_with_ttl(
                format!("h{i:03}").as_bytes(),
                &value(i),
                Duration::from_secs(3600),
            )
            .unwrap();
        }
        // An older plain version under an expiring one: the expiry hides it too.
        db.put(b"e000", b"older").unwrap();
        db.put_with_ttl(b"e000", &value(0), Duration::from_secs(10))
            .unwrap();
        db.flush().unwrap();
        assert_eq!(db.get(b"e005").unwrap(), Some(value(5)));
        let (v, at) = db.get_with_expiry(b"h001").unwrap().unwrap();
        assert_eq!((v, at), (value(1), T0 + 3_600_000));
        assert_eq!(db.get_with_expiry(b"p001").unwrap().unwrap().1, NEVER);
        assert_eq!(keys(&db, IterOptions::default(), false).len(), 400);
        let snap = db.snapshot();

        clock.advance(Duration::from_secs(10));
        // Expired, not compacted: hidden from every read.
        for i in [0, 1, 7, 199] {
            let k = format!("e{i:03}");
            assert_eq!(db.get(k.as_bytes()).unwrap(), None, "{design}: get {k}");
            assert_eq!(db.get_at(k.as_bytes(), &snap).unwrap(), None, "{design}");
        }
        let live = keys(&db, IterOptions::default(), false);
        assert_eq!(live.len(), 200, "{design}");
        assert!(live.iter().all(|k| !k.starts_with(b"e")));
        assert_eq!(keys(&db, IterOptions::default(), true), live, "{design}");
        assert_eq!(keys(&db, IterOptions::default().at(&snap), false), live);
        assert!(keys(&db, IterOptions::prefix("e"), false).is_empty());
        assert_eq!(db.get(b"p007").unwrap(), Some(value(7)));

        // With the snapshot alive a compaction keeps the versions it sees (a background
        // compaction that started before it was taken need not: `options::filter`; the
        // deterministic case is in tests/compaction_filter.rs); reads hide them either way.
        db.compact_range(None, None).unwrap();
        assert_eq!(db.get(b"e000").unwrap(), None);
        assert_eq!(keys(&db, IterOptions::default().at(&snap), false), live);
        drop(snap);

        // Released: the next compaction removes every expired entry from the files.
        db.compact_range(None, None).unwrap();
        assert_eq!(entries_in_files(&db), 200, "{design}");
        assert_eq!(db.get(b"e000").unwrap(), None, "{design}: no older version");
        assert_eq!(keys(&db, IterOptions::default(), false), live);
        for i in 0..100 {
            assert_eq!(
                db.get(format!("p{i:03}").as_bytes()).unwrap(),
                Some(value(i))
            );
            assert_eq!(
                db.get(format!("h{i:03}").as_bytes()).unwrap(),
                Some(value(i))
            );
        }

        // An hour later the rest of the expiring keys go; the plain ones stay.
        clock.advance(Duration::from_secs(3600));
        assert_eq!(keys(&db, IterOptions::default(), false).len(), 100);
        db.compact_range(None, None).unwrap();
        assert_eq!(entries_in_files(&db), 100, "{design}");
        db.close().unwrap();
        let db = TtlDb::open("/t", options(design, &env), ttl_options(&clock)).unwrap();
        assert_eq!(db.get(b"p099").unwrap(), Some(value(99)));
        assert_eq!(db.get(b"h000").unwrap(), None);
        db.close().unwrap();
    }
}

#[test]
fn the_store_wide_ttl_and_batches() {
    let env = Env::memory();
    let clock = Arc::new(ManualClock::new(T0));
    let mut t = ttl_options(&clock);
    t.default_ttl = Some(Duration::from_millis(500));
    let db = TtlDb::open("/d", options("leveldb", &env), t).unwrap();
    db.put(b"a", b"1").unwrap();
    let mut b = TtlBatch::new();
    b.put(b"b", b"2");
    b.put_with_ttl(b"c", b"3", Duration::from_secs(5));
    b.delete(b"a");
    db.write(b, false).unwrap();
    assert_eq!(db.get(b"a").unwrap(), None);
    assert_eq!(db.get(b"b").unwrap().as_deref(), Some(&b"2"[..]));
    clock.advance(Duration::from_millis(499));
    assert_eq!(db.get(b"b").unwrap().as_deref(), Some(&b"2"[..]));
    clock.advance(Duration::from_millis(1));
    assert_eq!(db.get(b"b").unwrap(), None, "expires at its deadline");
    assert_eq!(db.get(b"c").unwrap().as_deref(), Some(&b"3"[..]));
    db.put_expiring_at(b"d", b"4", T0 + 400).unwrap();
    assert_eq!(db.get(b"d").unwrap(), None, "a deadline already past");
}

#[test]
fn plain_and_expiring_stores_do_not_open_as_each_other() {
    let env = Env::memory();
    let clock = Arc::new(ManualClock::new(T0));
    TtlDb::open("/x", options("leveldb", &env), ttl_options(&clock))
        .unwrap()
        .close()
        .unwrap();
    let e = Db::open("/x", options("leveldb", &env)).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("expiring_values=true") && m.contains("TtlDb")),
        "{e}"
    );
    Db::open("/y", options("leveldb", &env))
        .unwrap()
        .close()
        .unwrap();
    let e = TtlDb::open("/y", options("leveldb", &env), ttl_options(&clock)).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("expiring_values=false")),
        "{e}"
    );
    // load_options gives the store's own record.
    let o = shale::load_options("/x", options("leveldb", &env)).unwrap();
    assert!(o.expiring_values);
}
