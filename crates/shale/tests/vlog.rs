//! The value log (`wisckey`): separation, checked reads, garbage collection with snapshots,
//! iterators, racing deletes and reopen.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "a test helper's failure is a test failure"
)]

use std::collections::BTreeMap;
use std::sync::Arc;

use shale::env::Env;
use shale::env::FileSystem;
use shale::env::mem::MemFs;
use shale::{Db, IterOptions, Options, WriteBatch, WriteOptions};

const DIR: &str = "/db";

fn opts(env: &Env) -> Options {
    let mut o = Options::preset("wisckey").expect("preset");
    o.env = env.clone();
    o.write_buffer_size = 64 * 1024;
    o.vlog_segment_size = 16 * 1024;
    o.min_separated_value_size = 64;
    // Tests drive collection themselves.
    o.vlog_gc = false;
    o.target_file_size = 32 * 1024;
    o.max_bytes_for_level_base = 128 * 1024;
    o
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn value(i: u32, round: u32) -> Vec<u8> {
    let mut v = format!("v{i}-{round}-").into_bytes();
    v.resize(300 + (i as usize % 7) * 50, b'a' + (round % 26) as u8);
    v
}

fn segments(env: &Env) -> Vec<String> {
    let mut v: Vec<String> = env
        .fs()
        .list_dir(std::path::Path::new(DIR))
        .expect("list")
        .into_iter()
        .filter(|n| n.ends_with(".vlog"))
        .collect();
    v.sort();
    v
}

/// A `wisckey` store on a fresh `MemFs` (1 MiB segments) holding keys `0..n`, round 0.
fn store_with(n: u32) -> (MemFs, Options, Db) {
    let fs = MemFs::new();
    let mut o = opts(&Env::new(Arc::new(fs.clone())));
    o.vlog_segment_size = 1 << 20;
    let db = Db::open(DIR, o.clone()).expect("open");
    for i in 0..n {
        db.put(&key(i), &value(i, 0)).expect("put");
    }
    (fs, o, db)
}

fn all(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    db.iter(IterOptions::default())
        .expect("iter")
        .map(|r| r.expect("entry"))
        .collect()
}

fn check(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, n: u32) {
    for i in 0..n {
        assert_eq!(
            db.get(&key(i)).expect("get"),
            model.get(&key(i)).cloned(),
            "key {i}"
        );
    }
    assert_eq!(&all(db), model);
}

/// Collect until nothing is left to collect.
fn gc_all(db: &Db) -> u64 {
    let mut total = 0;
    loop {
        let n = db.run_value_gc().expect("gc");
        if n == 0 {
            return total;
        }
        total += n;
    }
}

#[test]
fn gc_reclaims_overwritten_and_deleted_values() {
    let env = Env::memory();
    let db = Db::open(DIR, opts(&env)).expect("open");
    let n = 300;
    let mut model = BTreeMap::new();
    for round in 0..3 {
        for i in 0..n {
            if round == 2 && i % 3 == 0 {
                db.delete(&key(i)).expect("delete");
                model.remove(&key(i));
            } else {
                db.put(&key(i), &value(i, round)).expect("put");
                model.insert(key(i), value(i, round));
            }
        }
    }
    db.compact_range(None, None).expect("compact");
    let before = segments(&env).len();
    let stats = db.stats();
    assert!(
        stats.placement.segments.iter().any(|s| s.2 > 0),
        "garbage is counted: {stats:?}"
    );
    let dropped = gc_all(&db);
    assert!(dropped > 0);
    check(&db, &model, n);
    let after = segments(&env).len();
    assert!(after < before, "segments {before} -> {after}");
    let stats = db.stats();
    assert!(stats.placement.gc_segments_deleted >= dropped && stats.placement.gc_bytes_read > 0);
    db.close().expect("close");
    let db = Db::open(DIR, opts(&env)).expect("reopen");
    check(&db, &model, n);
    // Deleted keys stay deleted after collection, compaction and reopen.
    db.compact_range(None, None).expect("compact");
    gc_all(&db);
    check(&db, &model, n);
}

#[test]
fn snapshots_and_iterators_keep_dropped_segments_readable() {
    let env = Env::memory();
    let db = Db::open(DIR, opts(&env)).expect("open");
    let n = 200;
    let mut old = BTreeMap::new();
    for i in 0..n {
        db.put(&key(i), &value(i, 0)).expect("put");
        old.insert(key(i), value(i, 0));
        // A delete is logged but kept in the tree: its record is garbage from the start, so
        // these segments are worth collecting although the snapshot keeps every old value.
        db.delete(b"absent").expect("delete");
    }
    db.flush().expect("flush");
    let snap = db.snapshot();
    let mut it = db.iter(IterOptions::default()).expect("iter");
    let first = it.next().expect("some").expect("entry");
    // Overwrite half, so the old segments hold both garbage and live values.
    let mut new = old.clone();
    for i in (0..n).step_by(2) {
        db.put(&key(i), &value(i, 1)).expect("put");
        new.insert(key(i), value(i, 1));
    }
    db.compact_range(None, None).expect("compact");
    let before = segments(&env);
    assert!(gc_all(&db) > 0);
    // The snapshot and the iterator still read the old values from the dropped segments.
    for i in 0..n {
        assert_eq!(
            db.get_at(&key(i), &snap).expect("get"),
            old.get(&key(i)).cloned()
        );
    }
    let mut seen: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    seen.insert(first.0, first.1);
    for e in it {
        let (k, v) = e.expect("entry");
        seen.insert(k, v);
    }
    assert_eq!(seen, old);
    check(&db, &new, n);
    let pinned = segments(&env);
    assert!(
        before.iter().all(|s| pinned.contains(s)),
        "no segment file is deleted while a snapshot may read it"
    );
    drop(snap);
    db.run_value_gc().expect("gc");
    let after = segments(&env);
    assert!(after.len() < before.len(), "{before:?} -> {after:?}");
    check(&db, &new, n);
}

#[test]
fn gc_racing_deletes_and_compactions_never_resurrects() {
    let env = Env::memory();
    let db = Arc::new(Db::open(DIR, opts(&env)).expect("open"));
    let n = 400;
    for i in 0..n {
        db.put(&key(i), &value(i, 0)).expect("put");
    }
    db.flush().expect("flush");
    let writer = {
        let db = Arc::clone(&db);
        std::thread::spawn(move || {
            for round in 1..4 {
                for i in 0..n {
                    let mut b = WriteBatch::new();
                    if i % 2 == 0 {
                        b.delete(&key(i));
                    } else {
                        b.put(&key(i), &value(i, round));
                    }
                    db.write(b).expect("write");
                }
                db.compact_range(None, None).expect("compact");
            }
        })
    };
    let mut collected = 0;
    while !writer.is_finished() {
        collected += db.run_value_gc().expect("gc");
    }
    writer.join().expect("writer");
    collected += gc_all(&db);
    let mut model = BTreeMap::new();
    for i in (1..n).step_by(2) {
        model.insert(key(i), value(i, 3));
    }
    check(&db, &model, n);
    assert!(collected > 0);
    drop(db);
    let db = Db::open(DIR, opts(&env)).expect("reopen");
    check(&db, &model, n);
}

#[test]
fn automatic_gc_keeps_every_value_correct() {
    let env = Env::memory();
    let mut o = opts(&env);
    o.vlog_gc = true;
    o.vlog_gc_ratio = 0.3;
    let db = Db::open(DIR, o.clone()).expect("open");
    let n = 200;
    for round in 0..6 {
        for i in 0..n {
            db.put(&key(i), &value(i, round)).expect("put");
        }
        db.compact_range(None, None).expect("compact");
    }
    let mut model = BTreeMap::new();
    for i in 0..n {
        model.insert(key(i), value(i, 5));
    }
    check(&db, &model, n);
    db.close().expect("close");
    let db = Db::open(DIR, o).expect("reopen");
    check(&db, &model, n);
}

#[test]
fn leveldb_has_no_value_log() {
    let env = Env::memory();
    let mut o = Options::default().with_env(env.clone());
    o.write_buffer_size = 64 * 1024;
    let db = Db::open(DIR, o).expect("open");
    db.put(b"k", &[7u8; 1000]).expect("put");
    assert_eq!(db.run_value_gc().expect("gc"), 0);
    assert!(segments(&env).is_empty());
    assert!(db.stats().placement.segments.is_empty());
}

#[test]
fn a_store_is_opened_only_by_its_placement() {
    let env = Env::memory();
    let db = Db::open(DIR, opts(&env)).expect("open");
    db.put(b"k", &[1u8; 500]).expect("put");
    db.close().expect("close");
    let o = Options::default().with_env(env.clone());
    let e = Db::open(DIR, o).expect_err("leveldb must refuse a wisckey store");
    assert!(e.to_string().contains("vlog"), "{e}");
}

#[test]
fn a_torn_tail_is_cut_once_and_its_segment_collected_later() {
    let n = 50;
    let (fs, mut o, db) = store_with(n);
    // A crash, not a close: a close records the newest segment as sealed, and recovery
    // then reads it only up to its recorded end.
    let env = crash_after_sync(&fs, db, &key(n - 1), &value(n - 1, 0));
    o.env = env.clone();
    // A crash tore the newest segment's tail: half a record after the last whole one.
    let newest = segments(&env).pop().expect("a segment");
    let path = std::path::Path::new(DIR).join(&newest);
    let mut bytes = env
        .read_all(&path, shale::env::ReadCause::Other)
        .expect("read");
    let whole = bytes.len();
    let half_record = bytes[whole - 200..whole - 100].to_vec();
    bytes.extend_from_slice(&half_record);
    let mut f = env
        .create(&path, shale::env::WriteCause::Other)
        .expect("create");
    f.append(&bytes).expect("append");
    f.sync().expect("sync");
    drop(f);
    let mut model = BTreeMap::new();
    {
        let db = Db::open(DIR, o.clone()).expect("recover the torn tail");
        for i in 0..n {
            model.insert(key(i), value(i, 0));
        }
        check(&db, &model, n);
        // Overwrite everything, so that the torn segment holds only garbage.
        for i in 0..n {
            db.put(&key(i), &value(i, 1)).expect("put");
            model.insert(key(i), value(i, 1));
        }
        db.flush().expect("flush");
    }
    // Reopened, the torn segment is no longer the newest: its recorded end keeps the torn
    // bytes from being read as damage, and collection can drop it.
    let db = Db::open(DIR, o).expect("reopen");
    check(&db, &model, n);
    db.compact_range(None, None).expect("compact");
    gc_all(&db);
    check(&db, &model, n);
    assert!(
        !segments(&env).contains(&newest),
        "the torn segment {newest} should be collected: {:?}",
        segments(&env)
    );
}

#[test]
fn gc_rewrites_are_counted_as_gc() {
    let env = Env::memory();
    let db = Db::open(DIR, opts(&env)).expect("open");
    for round in 0..2 {
        for i in 0..200 {
            if round == 0 || i % 2 == 0 {
                db.put(&key(i), &value(i, round)).expect("put");
            }
        }
    }
    db.compact_range(None, None).expect("compact");
    let before = db.stats();
    assert!(gc_all(&db) > 0);
    let after = db.stats();
    let gc = shale::env::WriteCause::Gc;
    assert!(after.placement.gc_records_relocated > 0);
    assert!(after.written_for(gc) > before.written_for(gc));
}

/// Make every write to `db` durable with one synced write (of `k`, `v` again), then crash:
/// the store as the durable bytes of `fs` hold it, before `db` closes. The writes stay in
/// the log after the head, for recovery to replay.
fn crash_after_sync(fs: &MemFs, db: Db, k: &[u8], v: &[u8]) -> Env {
    let mut b = WriteBatch::new();
    b.put(k, v);
    db.write_opt(b, WriteOptions { sync: true })
        .expect("synced put");
    let image = fs.snapshot_durable();
    drop(db);
    Env::new(Arc::new(image))
}

/// Rewrite `path` with `bytes` (synced).
fn rewrite(env: &Env, path: &std::path::Path, bytes: &[u8]) {
    let mut f = env
        .create(path, shale::env::WriteCause::Other)
        .expect("create");
    f.append(bytes).expect("append");
    f.sync().expect("sync");
}

#[test]
fn a_flipped_bit_mid_newest_segment_is_corruption_not_a_torn_tail() {
    // Synced records follow the damaged one: a crash cannot leave that (a sync makes the
    // whole prefix durable), so cutting the log there would silently lose synced writes.
    let n = 50;
    let (fs, mut o, db) = store_with(n);
    // A crash, not a close: a close records the newest segment as sealed, and recovery
    // then reads it only up to its recorded end.
    let env = crash_after_sync(&fs, db, &key(n - 1), &value(n - 1, 0));
    o.env = env.clone();
    let newest = segments(&env).pop().expect("a segment");
    let path = std::path::Path::new(DIR).join(&newest);
    let mut bytes = env
        .read_all(&path, shale::env::ReadCause::Other)
        .expect("read");
    let at = bytes.len() / 3;
    bytes[at] ^= 0x10;
    rewrite(&env, &path, &bytes);
    match Db::open(DIR, o) {
        Err(shale::Error::Corruption { .. }) => {}
        Err(e) => panic!("expected corruption, got {e}"),
        Ok(db) => {
            let got = all(&db);
            assert_eq!(
                got.len(),
                n as usize,
                "a bit flip in the middle of the newest segment silently dropped the synced \
                 writes after it ({} of {n} keys left)",
                got.len()
            );
        }
    }
}

#[test]
fn a_truncated_sealed_segment_is_corruption_not_a_half_created_one() {
    // Only the newest segment can be short of its header (its creation was cut); an older
    // one was synced in full before its successor got a record.
    let env = Env::memory();
    let mut o = opts(&env);
    o.vlog_segment_size = 4096;
    let db = Db::open(DIR, o.clone()).expect("open");
    let n = 60;
    for i in 0..n {
        db.put(&key(i), &value(i, 0)).expect("put");
    }
    db.close().expect("close");
    let segs = segments(&env);
    assert!(segs.len() >= 3, "segments: {segs:?}");
    let path = std::path::Path::new(DIR).join(&segs[segs.len() - 2]);
    rewrite(&env, &path, b"");
    match Db::open(DIR, o) {
        Err(shale::Error::Corruption { .. }) => {}
        Err(e) => panic!("expected corruption, got {e}"),
        Ok(db) => {
            let got = all(&db);
            assert_eq!(
                got.len(),
                n as usize,
                "a sealed segment cut to nothing was deleted as half-created: {} of {n} keys",
                got.len()
            );
        }
    }
}

#[test]
fn a_process_crash_leaves_a_zero_filled_tail_that_recovery_reads_as_the_end() {
    let n = 60;
    let (fs, mut o, db) = store_with(n);
    let mut model: BTreeMap<_, _> = (0..n).map(|i| (key(i), value(i, 0))).collect();
    // A process crash: the OS keeps every byte handed to it, and the newest segment's space
    // reserved after its records (`Env::create_log`) as zeros.
    let crashed = fs.fork();
    drop(db);
    let env = Env::new(Arc::new(crashed));
    let newest = segments(&env).pop().expect("a segment");
    let path = std::path::Path::new(DIR).join(&newest);
    let bytes = env
        .read_all(&path, shale::env::ReadCause::Other)
        .expect("read");
    let zeros = bytes.iter().rev().take_while(|&&b| b == 0).count();
    assert!(
        zeros > 0 && bytes.len().is_multiple_of(shale::env::mem::LOG_RESERVE),
        "the newest segment ends in its reservation ({} bytes, {zeros} zeros)",
        bytes.len()
    );
    o.env = env.clone();
    // `verify` reads the crashed store as recovery will: the zeros end the newest segment.
    let report = shale::verify(DIR, o.clone()).expect("verify the crashed store");
    assert!(report.placement.records >= u64::from(n), "{report:?}");
    for round in 0..2 {
        let db = Db::open(DIR, o.clone()).expect("recover");
        check(&db, &model, n);
        for i in 0..n / 2 {
            db.put(&key(i), &value(i, round + 1)).expect("put");
            model.insert(key(i), value(i, round + 1));
        }
        check(&db, &model, n);
    }
    let report = shale::verify(DIR, o).expect("verify");
    assert!(report.placement.segments > 0, "{report:?}");
}

#[test]
fn a_zeroed_head_segment_is_corruption_not_a_half_created_one() {
    let (fs, mut o, db) = store_with(20);
    let first = fs.fork();
    drop(db);
    // Recovery starts a new segment and commits it as the head; a process crash follows.
    o.env = Env::new(Arc::new(first.clone()));
    let db = Db::open(DIR, o.clone()).expect("recover");
    let second = first.fork();
    drop(db);
    let env = Env::new(Arc::new(second));
    o.env = env.clone();
    let head = segments(&env).pop().expect("a segment");
    let path = std::path::Path::new(DIR).join(&head);
    let len = env.fs().file_size(&path).expect("size") as usize;
    // Its header was synced before the MANIFEST named it: zeros there are damage, and
    // taking the file for a half-created segment would drop it silently.
    rewrite(&env, &path, &vec![0u8; len]);
    let Err(err) = Db::open(DIR, o) else {
        panic!("a zeroed head segment must not open");
    };
    assert!(matches!(err, shale::Error::Corruption { .. }), "{err}");
}

#[test]
fn a_half_created_segment_recovery_saw_is_removed_after_a_later_machine_crash() {
    use shale::values::vlog::format;
    let (fs, mut o, db) = store_with(10);
    let store_id = db.property("shale.store-id").expect("store id");
    let store_id = u64::from_str_radix(&store_id, 16).expect("hex");
    drop(db);
    // A process crash inside a segment's creation: its header handed to the OS, not yet
    // synced, the file longer than the header by its reservation.
    let number = 900_000;
    let path = std::path::Path::new(DIR).join(format::segment_file_name(number));
    {
        let mut w = fs.create_log(&path).expect("create");
        w.append(&format::encode_header(number, store_id))
            .expect("header");
        w.flush().expect("flush");
        let crashed = fs.fork();
        o.env = Env::new(Arc::new(crashed.clone()));
        drop(w);
        // Recovery reads the segment's zeros as a torn tail at the header and records that
        // end; its new segment's directory sync makes the half-created one's name durable.
        let db = Db::open(DIR, o.clone()).expect("recover");
        drop(db);
        // A machine crash before the header page was written back: the file is empty.
        crashed.crash();
        assert_eq!(crashed.file_size(&path).expect("size"), 0);
    }
    let db = Db::open(DIR, o).expect("a half-created segment is removed, not corruption");
    let mut model = BTreeMap::new();
    for i in 0..10 {
        model.insert(key(i), value(i, 0));
    }
    check(&db, &model, 10);
}

#[test]
fn a_segment_of_a_newer_format_version_is_refused_by_name() {
    use shale::format::{crc32c, mask_crc};
    let (_fs, o, db) = store_with(10);
    let store_id = db.property("shale.store-id").expect("store id");
    let store_id = u64::from_str_radix(&store_id, 16).expect("hex");
    db.close().expect("close");
    let env = o.env.clone();
    let names = segments(&env);
    let first = names.first().expect("a segment").clone();
    let path = std::path::Path::new(DIR).join(&first);
    let mut bytes = env
        .read_all(&path, shale::env::ReadCause::Other)
        .expect("read");
    // This build writes version 3 (records may be range deletes).
    assert_eq!(bytes[8..12], 3u32.to_le_bytes());
    // A newer release's header: version 4, its checksum valid (over the store id too).
    bytes[8..12].copy_from_slice(&4u32.to_le_bytes());
    let mut body = bytes[..20].to_vec();
    body.extend_from_slice(&store_id.to_le_bytes());
    bytes[20..24].copy_from_slice(&mask_crc(crc32c(&body)).to_le_bytes());
    rewrite(&env, &path, &bytes);
    let Err(err) = Db::open(DIR, o) else {
        panic!("a segment of a newer format version must not open");
    };
    match &err {
        shale::Error::Corruption {
            file,
            offset,
            detail,
        } => {
            assert_eq!(file, &path, "{err}");
            assert_eq!(*offset, 0);
            assert!(
                detail.contains("version 4") && detail.contains("newer release"),
                "{err}"
            );
        }
        e => panic!("expected corruption naming the segment, got {e}"),
    }
}
