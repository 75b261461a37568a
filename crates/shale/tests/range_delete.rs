//! `Db::delete_range` (issue 18): range tombstones in gets, scans and snapshots, across
//! flushes, reopens and compactions, for every combination of the axes that keeps keys in
//! order; the point-only layout refuses it.

#![allow(
    clippy::expect_used,
    reason = "a test helper's failure is a test failure"
)]

use shale::env::Env;
use shale::env::mem::MemFs;
use shale::{Db, IterOptions, Options, Snapshot, WriteBatch};

/// Small buffers so that a few thousand keys make several tables and levels.
fn options(axes: &shale::Axes, env: &Env) -> Options {
    let mut o = Options::preset("leveldb").expect("preset").with_axes(*axes);
    o.env = env.clone();
    o.write_buffer_size = 16 * 1024;
    o.target_file_size = 8 * 1024;
    o.max_bytes_for_level_base = 32 * 1024;
    o.min_separated_value_size = 16;
    o.vlog_segment_size = 8 * 1024;
    o
}

fn ordered_axes() -> Vec<shale::Axes> {
    shale::Axes::all()
        .into_iter()
        .filter(|a| a.layout.supports_scans())
        .collect()
}

fn k(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn v(i: u32, round: u32) -> Vec<u8> {
    format!("value-{i}-{round}-{}", "x".repeat(20)).into_bytes()
}

fn keys(db: &Db, snapshot: Option<&Snapshot>) -> Vec<Vec<u8>> {
    let opts = match snapshot {
        Some(s) => IterOptions::default().at(s),
        None => IterOptions::default(),
    };
    db.iter(opts)
        .expect("iter")
        .map(|r| r.expect("item").0)
        .collect()
}

fn keys_rev(db: &Db) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = db
        .iter(IterOptions::default())
        .expect("iter")
        .rev()
        .map(|r| r.expect("item").0)
        .collect();
    out.reverse();
    out
}

fn expect_keys(range: impl Iterator<Item = u32>) -> Vec<Vec<u8>> {
    range.map(k).collect()
}

fn property(db: &Db, name: &str) -> u64 {
    db.property(name)
        .expect("property")
        .parse()
        .expect("a number")
}

/// Gets, scans both ways and a cursor see the range gone; a snapshot taken before still
/// sees it; writes after the tombstone are visible; all of it the same in the memtable,
/// after a flush, after a reopen and after a full compaction.
#[test]
fn range_delete_hides_keys_in_every_ordered_design() {
    for axes in ordered_axes() {
        let name = axes.name();
        let env = Env::memory();
        let db = Db::open("/rd", options(&axes, &env)).expect("open");
        for i in 0..300 {
            db.put(&k(i), &v(i, 0)).expect("put");
        }
        db.flush().expect("flush");
        for i in 100..200 {
            db.put(&k(i), &v(i, 1)).expect("put");
        }
        let before = db.snapshot();
        db.delete_range(&k(50), &k(250)).expect("delete_range");
        let after = db.snapshot();
        // Written after the tombstone: visible.
        db.put(&k(60), &v(60, 2)).expect("put");
        let mut want: Vec<Vec<u8>> = expect_keys(0..50);
        want.push(k(60));
        want.extend(expect_keys(250..300));
        let check = |db: &Db, stage: &str, snaps: Option<(&Snapshot, &Snapshot)>| {
            assert_eq!(keys(db, None), want, "{name} {stage}: scan");
            assert_eq!(keys_rev(db), want, "{name} {stage}: reverse scan");
            assert_eq!(
                db.get(&k(49)).expect("get"),
                Some(v(49, 0)),
                "{name} {stage}"
            );
            assert_eq!(db.get(&k(50)).expect("get"), None, "{name} {stage}");
            assert_eq!(db.get(&k(150)).expect("get"), None, "{name} {stage}");
            assert_eq!(db.get(&k(249)).expect("get"), None, "{name} {stage}");
            assert_eq!(
                db.get(&k(250)).expect("get"),
                Some(v(250, 0)),
                "{name} {stage}"
            );
            assert_eq!(
                db.get(&k(60)).expect("get"),
                Some(v(60, 2)),
                "{name} {stage}"
            );
            let mut c = db.cursor(IterOptions::default()).expect("cursor");
            c.seek(&k(40)).expect("seek");
            let mut seen = Vec::new();
            while c.valid() && seen.len() < 12 {
                seen.push(c.key().to_vec());
                c.next().expect("next");
            }
            assert_eq!(seen, want[40..52].to_vec(), "{name} {stage}: cursor");
            if let Some((before, after)) = snaps {
                assert_eq!(
                    keys(db, Some(before)),
                    expect_keys(0..300),
                    "{name} {stage}"
                );
                assert_eq!(
                    db.get_at(&k(150), before).expect("get_at"),
                    Some(v(150, 1)),
                    "{name} {stage}: snapshot before"
                );
                let mut at_after: Vec<Vec<u8>> = expect_keys(0..50);
                at_after.extend(expect_keys(250..300));
                assert_eq!(keys(db, Some(after)), at_after, "{name} {stage}");
                assert_eq!(db.get_at(&k(60), after).expect("get_at"), None, "{name}");
            }
        };
        check(&db, "in the memtable", Some((&before, &after)));
        db.flush().expect("flush");
        assert_eq!(property(&db, "shale.range-tombstones-mem"), 0, "{name}");
        check(&db, "flushed", Some((&before, &after)));
        db.compact_range(None, None).expect("compact");
        check(&db, "compacted under snapshots", Some((&before, &after)));
        drop(before);
        drop(after);
        db.compact_range(None, None).expect("compact");
        check(&db, "compacted", None);
        db.close().expect("close");
        let db = Db::open("/rd", options(&axes, &env)).expect("reopen");
        check(&db, "reopened", None);
        db.close().expect("close");
    }
}

/// Recovery replays a logged range tombstone: a crash (the in-memory file system's, which
/// keeps only synced bytes) before the flush, and another after it, lose nothing.
#[test]
fn range_delete_survives_crashes_before_and_after_flush() {
    for axes in ordered_axes() {
        let name = axes.name();
        let fs = MemFs::new();
        let env = Env::new(std::sync::Arc::new(fs.clone()));
        let db = Db::open("/crash", options(&axes, &env)).expect("open");
        for i in 0..200 {
            db.put(&k(i), &v(i, 0)).expect("put");
        }
        db.flush().expect("flush");
        let mut b = WriteBatch::new();
        b.put(&k(10), &v(10, 1));
        b.delete_range(&k(5), &k(150));
        b.put(&k(20), &v(20, 1));
        db.write_opt(b, shale::WriteOptions { sync: true })
            .expect("batch");
        let mut want = expect_keys(0..5);
        want.push(k(20));
        want.extend(expect_keys(150..200));
        assert_eq!(keys(&db, None), want, "{name}: before the crash");
        // Crash with the tombstone only in the log.
        fs.crash();
        drop(db);
        let db = Db::open("/crash", options(&axes, &env)).expect("reopen after crash");
        assert_eq!(keys(&db, None), want, "{name}: replayed from the log");
        assert_eq!(db.get(&k(10)).expect("get"), None, "{name}");
        // Recovery flushed the log: the tombstone is in the MANIFEST now.
        assert_eq!(property(&db, "shale.range-tombstones-mem"), 0, "{name}");
        db.flush().expect("flush");
        fs.crash();
        drop(db);
        let db = Db::open("/crash", options(&axes, &env)).expect("reopen after flush");
        assert_eq!(keys(&db, None), want, "{name}: from the MANIFEST");
        // A read-only open sees the same, from the log too.
        db.delete_range(&k(150), &k(160)).expect("delete_range");
        let ro = Db::open_read_only("/crash", options(&axes, &env)).expect("read-only");
        let mut want_ro = want.clone();
        want_ro.retain(|key| {
            key.as_slice() < k(150).as_slice() || key.as_slice() >= k(160).as_slice()
        });
        assert_eq!(keys(&ro, None), want_ro, "{name}: read-only open");
        drop(ro);
        db.close().expect("close");
    }
}

/// A compaction drops what a range tombstone hides once no snapshot sees it (counted in
/// the files' entries), keeps it while a snapshot does, and the tombstone leaves the
/// version once no file with older entries has keys in its range (judged by the files'
/// key bounds). O(1) in the keys deleted: writing the
/// tombstone writes one log record, not one per key.
#[test]
fn compaction_drops_range_deleted_entries() {
    for axes in ordered_axes() {
        let name = axes.name();
        let env = Env::memory();
        let db = Db::open("/cd", options(&axes, &env)).expect("open");
        for i in 0..2000 {
            db.put(&k(i), &v(i, 0)).expect("put");
        }
        db.flush().expect("flush");
        db.compact_range(None, None).expect("compact");
        let entries = |db: &Db| db.live_files().iter().map(|f| f.entries).sum::<u64>();
        assert_eq!(entries(&db), 2000, "{name}: every key once");
        let seq = property(&db, "shale.last-sequence");
        let snap = db.snapshot();
        db.delete_range(&k(100), &k(2000)).expect("delete_range");
        assert_eq!(
            property(&db, "shale.last-sequence"),
            seq + 1,
            "{name}: one sequence number, one entry"
        );
        db.flush().expect("flush");
        assert_eq!(property(&db, "shale.range-tombstones"), 1, "{name}");
        db.compact_range(None, None).expect("compact");
        assert_eq!(entries(&db), 2000, "{name}: a snapshot still sees them");
        assert_eq!(db.get_at(&k(500), &snap).expect("get_at"), Some(v(500, 0)));
        assert_eq!(db.get(&k(500)).expect("get"), None);
        drop(snap);
        db.compact_range(None, None).expect("compact");
        assert_eq!(entries(&db), 100, "{name}: the hidden entries are dropped");
        assert_eq!(
            property(&db, "shale.range-tombstones"),
            0,
            "{name}: no file's keys reach into its range, the tombstone is dropped"
        );
        assert_eq!(keys(&db, None).len(), 100, "{name}");
        db.close().expect("close");
        let db = Db::open("/cd", options(&axes, &env)).expect("reopen");
        assert_eq!(property(&db, "shale.range-tombstones"), 0, "{name}");
        assert_eq!(keys(&db, None).len(), 100, "{name}: after reopen");
        // Keys written again into the range are visible.
        db.put(&k(500), &v(500, 9)).expect("put");
        assert_eq!(db.get(&k(500)).expect("get"), Some(v(500, 9)), "{name}");
        db.close().expect("close");
    }
}

/// Bad ranges are refused; an empty one deletes nothing; the point-only layout refuses
/// every range delete, alone or in a batch, and writes nothing of the batch.
#[test]
fn range_delete_arguments_and_unsupported_layouts() {
    let env = Env::memory();
    let db = Db::open("/args", Options::default().with_env(env.clone())).expect("open");
    db.put(b"b", b"1").expect("put");
    assert!(matches!(
        db.delete_range(b"c", b"a"),
        Err(shale::Error::InvalidArgument(_))
    ));
    db.delete_range(b"b", b"b").expect("empty range");
    assert_eq!(db.get(b"b").expect("get").as_deref(), Some(&b"1"[..]));
    db.close().expect("close");

    for axes in shale::Axes::all()
        .into_iter()
        .filter(|a| !a.layout.supports_scans())
    {
        let env = Env::memory();
        let db = Db::open("/trie", options(&axes, &env)).expect("open");
        db.put(b"b", b"1").expect("put");
        let err = db.delete_range(b"a", b"c").expect_err("refused");
        match &err {
            shale::Error::Unsupported(m) => assert!(m.contains("delete_range"), "{m}"),
            other => panic!("{}: {other:?}", axes.name()),
        }
        let mut b = WriteBatch::new();
        b.put(b"x", b"2");
        b.delete_range(b"a", b"c");
        assert!(matches!(db.write(b), Err(shale::Error::Unsupported(_))));
        assert_eq!(db.get(b"b").expect("get").as_deref(), Some(&b"1"[..]));
        assert_eq!(
            db.get(b"x").expect("get"),
            None,
            "nothing of the batch written"
        );
        db.close().expect("close");
    }
}
