//! The value log's garbage collection through a whole store: counting at flush time and the
//! backlog-adaptive choice of segments, driven without the GC thread (`vlog_gc` off, the
//! engine's job runner called directly).

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "a test helper's failure is a test failure"
)]

use crate::Db;
use crate::db::testutil::settle;
use crate::env::Env;
use crate::env::mem::MemFs;
use crate::options::Options;
use crate::options::WriteOptions;
use crate::values::vlog::format::record_len;

const DIR: &str = "/db";

fn opts(env: &Env, gc_ratio: f64) -> Options {
    let mut o = Options::preset("wisckey").expect("preset");
    o.env = env.clone();
    // Flushes happen only when the test asks: a large memtable, and the log-size freeze
    // (twice the larger of segment and memtable size) far away.
    o.write_buffer_size = 4 << 20;
    o.vlog_segment_size = 16 * 1024;
    o.min_separated_value_size = 64;
    o.vlog_gc = false;
    o.vlog_gc_ratio = gc_ratio;
    o.vlog_gc_bytes_per_sec = 0;
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

fn total_garbage(db: &Db) -> u64 {
    db.stats().placement.segments.iter().map(|s| s.2).sum()
}

#[test]
fn a_flush_counts_what_it_supersedes_once() {
    let env = Env::memory();
    let db = Db::open(DIR, opts(&env, 0.5)).expect("open");
    let n = 100;
    for i in 0..n {
        db.put(&key(i), &value(i, 0)).expect("put");
    }
    db.flush().expect("flush");
    assert_eq!(total_garbage(&db), 0, "nothing superseded yet");
    let mut expected = 0u64;
    for i in 0..n {
        match i % 4 {
            // Overwritten twice in one memtable: both older versions are superseded.
            0 => {
                db.put(&key(i), &value(i, 1)).expect("put");
                db.put(&key(i), &value(i, 2)).expect("put");
                expected +=
                    (record_len(&key(i), &value(i, 0)) + record_len(&key(i), &value(i, 1))) as u64;
            }
            // Deleted: the old value is superseded, and the tombstone's own record stays
            // in the tree (garbage in the log from the start).
            1 => {
                db.delete(&key(i)).expect("delete");
                expected += (record_len(&key(i), &value(i, 0)) + record_len(&key(i), b"")) as u64;
            }
            _ => {}
        }
    }
    db.flush().expect("flush");
    assert_eq!(total_garbage(&db), expected);
    // A compaction merging the versions finds nothing new: no double count.
    db.compact_range(None, None).expect("compact");
    assert_eq!(total_garbage(&db), expected);
    db.close().expect("close");
    // The counts were persisted with the flush edits.
    let db = Db::open(DIR, opts(&env, 0.5)).expect("reopen");
    assert_eq!(total_garbage(&db), expected);
    db.close().expect("close");
}

fn gc_reads(db: &Db) -> u64 {
    reads_of(db, crate::env::ReadCause::Gc)
}

#[test]
fn a_flush_looks_nothing_up_while_no_table_holds_a_pointer() {
    let env = Env::memory();
    let mut o = opts(&env, 0.5);
    // Every lookup reads its block from the file, where the counters see it.
    o.block_cache_bytes = 0;
    let db = Db::open(DIR, o).expect("open");
    let small = |i: u32, r: u32| format!("s{i}-{r}").into_bytes();
    for r in 0..3 {
        for i in 0..200 {
            db.put(&key(i), &small(i, r)).expect("put");
        }
        db.flush().expect("flush");
    }
    assert_eq!(gc_reads(&db), 0, "values kept inline: no lookup at flush");
    // One separated value: from the next flush on, flushed keys are looked up again, and the
    // value a flush supersedes is counted.
    db.put(&key(7), &value(7, 0)).expect("put");
    db.flush().expect("flush");
    let before = total_garbage(&db);
    for i in 0..200 {
        db.put(&key(i), &small(i, 9)).expect("put");
    }
    db.flush().expect("flush");
    assert!(gc_reads(&db) > 0, "lookups read the tables");
    let inline_records: u64 = (0..200)
        .map(|i| record_len(&key(i), &small(i, 9)) as u64)
        .sum();
    // The superseded separated value, and the round's inline records (garbage in the log
    // as soon as they are logged, since the tree holds their values).
    assert_eq!(
        total_garbage(&db) - before,
        record_len(&key(7), &value(7, 0)) as u64 + inline_records
    );
    db.close().expect("close");
}

fn reads_of(db: &Db, cause: crate::env::ReadCause) -> u64 {
    db.stats()
        .read
        .iter()
        .filter(|(c, _)| *c == cause)
        .map(|(_, b)| b)
        .sum()
}

#[test]
fn a_flush_does_not_reopen_every_table_of_a_store_larger_than_the_table_cache() {
    // From a review: deciding whether lookups are needed by opening every table made each
    // flush of a small-value store with more tables than `max_open_files` reread every
    // table's metadata (about 50 KB per one-key flush here).
    let env = Env::memory();
    let mut o = opts(&env, 0.5);
    o.max_open_files = 16;
    o.target_file_size = 4096;
    o.write_buffer_size = 64 << 10;
    let db = Db::open(DIR, o).expect("open");
    // In a scattered order, so that flushed tables overlap and compactions cut them at the
    // target size (disjoint level-0 tables would move down whole).
    for i in 0..20_000 {
        let k = i * 7919 % 20_000;
        db.put(&key(k), format!("small-{k}").as_bytes())
            .expect("put");
    }
    db.flush().expect("flush");
    db.compact_range(None, None).expect("compact");
    let tables: usize = (0..7)
        .filter_map(|l| db.property(&format!("shale.num-files-at-level{l}")))
        .map(|s| s.parse::<usize>().expect("count"))
        .sum();
    assert!(tables > 64, "{tables} tables");
    let mut per_flush = Vec::new();
    for r in 0..3 {
        // Compactions the manual one left for the background (levels over their budget)
        // open tables too, at times that depend on the machine's load: wait them out.
        settle(&db);
        let before = reads_of(&db, crate::env::ReadCause::TableOpen);
        db.put(&key(r), b"x").expect("put");
        db.flush().expect("flush");
        per_flush.push(reads_of(&db, crate::env::ReadCause::TableOpen) - before);
    }
    assert!(
        per_flush.iter().all(|&b| b < 16 * 1024),
        "one-key flushes read {per_flush:?} bytes of table metadata ({tables} tables)"
    );
    db.close().expect("close");
}

/// Fill three rounds' worth of segments, then overwrite the keys `i % 5 < hot` once: every
/// old segment ends up with about `hot / 5` of its bytes garbage. Returns the segments a
/// non-forced collection drops.
fn automatic_collection_after_overwrites(hot: u32, gc_ratio: f64) -> u64 {
    let env = Env::memory();
    let db = Db::open(DIR, opts(&env, gc_ratio)).expect("open");
    let n = 300;
    for i in 0..n {
        db.put(&key(i), &value(i, 0)).expect("put");
    }
    db.flush().expect("flush");
    for i in (0..n).filter(|i| i % 5 < hot) {
        db.put(&key(i), &value(i, 1)).expect("put");
    }
    db.flush().expect("flush");
    let mut dropped = 0;
    loop {
        let d = db.run_value_job(false).expect("gc");
        if d == 0 {
            break;
        }
        dropped += d;
    }
    // Whatever was collected, every value reads back.
    for i in 0..n {
        let round = u32::from(i % 5 < hot);
        assert_eq!(db.get(&key(i)).expect("get"), Some(value(i, round)), "{i}");
    }
    db.close().expect("close");
    dropped
}

#[test]
fn automatic_collection_takes_segments_at_the_configured_ratio_only() {
    // 40% overwritten: the old segments are about 40% garbage; under a 0.6 ratio none is
    // taken (and that garbage is no backlog: user writes are not slowed for it).
    assert_eq!(automatic_collection_after_overwrites(2, 0.6), 0);
    assert!(automatic_collection_after_overwrites(2, 0.3) > 0);
    // 20% overwritten: segments at about 20% garbage stay under a 0.3 ratio.
    assert_eq!(automatic_collection_after_overwrites(1, 0.3), 0);
}

#[test]
fn superseded_records_are_skipped_without_a_lookup_and_live_ones_kept() {
    let env = Env::memory();
    let db = Db::open(DIR, opts(&env, 0.5)).expect("open");
    let n = 200;
    for i in 0..n {
        db.put(&key(i), &value(i, 0)).expect("put");
    }
    db.flush().expect("flush");
    // A snapshot taken now still reads the superseded values after collection.
    let snap = db.snapshot();
    let mut superseded = 0;
    for i in 0..n {
        if i % 5 == 0 {
            db.delete(&key(i)).expect("delete");
        } else if i % 2 == 0 {
            db.put(&key(i), &value(i, 1)).expect("put");
        } else {
            continue;
        }
        superseded += 1;
    }
    db.flush().expect("flush");
    let mut dropped = 0;
    while let n @ 1.. = db.run_value_job(true).expect("gc") {
        dropped += n;
    }
    assert!(dropped > 0);
    // Every superseded record of the first round was skipped, no other one.
    assert_eq!(db.stats().placement.gc_records_skipped, superseded);
    let expect = |i: u32| match (i % 5, i % 2) {
        (0, _) => None,
        (_, 0) => Some(value(i, 1)),
        _ => Some(value(i, 0)),
    };
    for i in 0..n {
        assert_eq!(db.get(&key(i)).expect("get"), expect(i), "{i}");
        let old = db.get_at(&key(i), &snap).expect("snapshot get");
        assert_eq!(old, Some(value(i, 0)), "snapshot {i}");
    }
    drop(snap);
    db.close().expect("close");
    // After a reopen nothing is remembered: records are looked up, and still right.
    let db = Db::open(DIR, opts(&env, 0.5)).expect("reopen");
    for i in 0..n {
        db.put(&key(i + n), &value(i, 2)).expect("put");
    }
    db.flush().expect("flush");
    while db.run_value_job(true).expect("gc") > 0 {}
    for i in 0..n {
        assert_eq!(db.get(&key(i)).expect("get"), expect(i), "{i}");
    }
    db.close().expect("close");
}

#[test]
fn overwrites_replayed_at_open_are_counted_as_garbage() {
    // `close` does not flush: the next open replays the newest writes and flushes them to a
    // table. The values those writes superseded are garbage too; compactions no longer count
    // what they drop, so uncounted here they are never counted, and automatic collection
    // never picks their segments.
    let env = Env::memory();
    let db = Db::open(DIR, opts(&env, 0.5)).expect("open");
    let n = 100;
    let mut expected = 0u64;
    for i in 0..n {
        db.put(&key(i), &value(i, 0)).expect("put");
        expected += record_len(&key(i), &value(i, 0)) as u64;
    }
    db.flush().expect("flush");
    for i in 0..n {
        db.put(&key(i), &value(i, 1)).expect("put");
    }
    db.close().expect("close");
    let db = Db::open(DIR, opts(&env, 0.5)).expect("reopen");
    db.compact_range(None, None).expect("compact");
    assert!(
        total_garbage(&db) >= expected,
        "garbage {} of at least {expected}",
        total_garbage(&db)
    );
    db.close().expect("close");
}

/// Round 0, flushed. Returns its bytes.
fn flushed_round(db: &Db, n: u32) -> u64 {
    let mut bytes = 0u64;
    for i in 0..n {
        db.put(&key(i), &value(i, 0)).expect("put");
        bytes += record_len(&key(i), &value(i, 0)) as u64;
    }
    db.flush().expect("flush");
    bytes
}

/// Round 1 over every key and, for every third key, a second overwrite (even) or a delete
/// (odd), left in the log. Returns the bytes of round 1 these supersede, and tombstones.
fn logged_rounds(db: &Db, n: u32) -> u64 {
    let mut expected = 0u64;
    for i in 0..n {
        db.put(&key(i), &value(i, 1)).expect("put");
    }
    for i in (0..n).step_by(3) {
        expected += record_len(&key(i), &value(i, 1)) as u64;
        if i % 2 == 0 {
            db.put(&key(i), &value(i, 2)).expect("put");
        } else {
            db.delete(&key(i)).expect("delete");
            // The tombstone's own record is garbage from the start.
            expected += record_len(&key(i), b"") as u64;
        }
    }
    expected
}

/// The first call keeps `segments`; a later one asserts the segments kept are unchanged (an
/// open that replays nothing counts nothing; it only adds its own new segment).
fn same_counts(first: &mut Option<Vec<(u64, u64, u64)>>, segments: Vec<(u64, u64, u64)>) {
    match first {
        None => *first = Some(segments),
        Some(f) => {
            let now: Vec<_> = segments
                .into_iter()
                .filter(|s| f.iter().any(|k| k.0 == s.0))
                .collect();
            assert_eq!(&now, f, "counted again");
        }
    }
}

fn check_rounds(db: &Db, n: u32) {
    for i in 0..n {
        let want = match i % 3 {
            0 if i % 2 == 0 => Some(value(i, 2)),
            0 => None,
            _ => Some(value(i, 1)),
        };
        assert_eq!(db.get(&key(i)).expect("get"), want, "key {i}");
    }
}

#[test]
fn versions_within_replayed_writes_are_counted_once() {
    // The replayed writes hold several versions of some keys: each older one is superseded
    // by the next (as a flush counts), the oldest replayed one supersedes the tree's.
    let env = Env::memory();
    let db = Db::open(DIR, opts(&env, 0.5)).expect("open");
    let n = 100;
    let expected = flushed_round(&db, n) + logged_rounds(&db, n);
    db.close().expect("close");
    let mut first: Option<Vec<(u64, u64, u64)>> = None;
    for _ in 0..2 {
        let db = Db::open(DIR, opts(&env, 0.5)).expect("reopen");
        // At least: the segment open at close is replayed with its values copied into the
        // tables and counted whole besides.
        assert!(
            total_garbage(&db) >= expected,
            "{} of {expected}",
            total_garbage(&db)
        );
        check_rounds(&db, n);
        same_counts(&mut first, db.stats().placement.segments);
        db.close().expect("close");
    }
}

#[test]
fn garbage_replayed_after_a_crash_is_counted_once() {
    // Each open is of a crash image (what was synced when the previous store was dropped),
    // so the open's edit alone persists the counts: a second open must replay nothing and
    // count nothing more.
    let fs = MemFs::new();
    let env = Env::new(std::sync::Arc::new(fs.clone()));
    let db = Db::open(DIR, opts(&env, 0.5)).expect("open");
    let n = 100;
    let round0 = flushed_round(&db, n);
    // Segments holding round 0 (round 1 may share the newest of them).
    let first: Vec<u64> = db.stats().placement.segments.iter().map(|s| s.0).collect();
    logged_rounds(&db, n);
    let mut batch = crate::wal::WriteBatch::new();
    batch.put(b"last", b"synced");
    db.write_opt(batch, WriteOptions { sync: true })
        .expect("sync");
    let mut image = fs.snapshot_durable();
    drop(db);
    let mut seen = None;
    for _ in 0..2 {
        let db = Db::open(
            DIR,
            opts(&Env::new(std::sync::Arc::new(image.clone())), 0.5),
        )
        .expect("reopen");
        check_rounds(&db, n);
        let segments = db.stats().placement.segments;
        // Unsynced segments are replayed with their values copied into the tables (whole
        // segments of garbage); round 0 was flushed before and is garbage only if counted.
        let in_first: u64 = segments
            .iter()
            .filter(|s| first.contains(&s.0))
            .map(|s| s.2)
            .sum();
        assert!(
            in_first >= round0,
            "round 0: {in_first} of {round0} counted"
        );
        same_counts(&mut seen, segments);
        image = image.snapshot_durable();
        drop(db);
    }
}

/// Value reads keep the records they read in the block cache: a second pass of gets and a
/// scan read no value-log bytes, and give the same values; with no block cache every pass
/// reads the log again. Values past the cached-record limit are never kept.
#[test]
fn value_reads_are_served_from_the_block_cache_once_read() {
    use crate::IterOptions;
    use crate::env::ReadCause;
    for cache in [true, false] {
        let env = Env::memory();
        let mut o = opts(&env, 0.5);
        o.block_cache_bytes = if cache { 8 << 20 } else { 0 };
        let db = Db::open(DIR, o).expect("open");
        let n = 200;
        for i in 0..n {
            db.put(&key(i), &value(i, 0)).expect("put");
        }
        let big = vec![b'x'; 100 * 1024];
        db.put(b"big", &big).expect("put");
        db.flush().expect("flush");
        let pass = |db: &Db| {
            for i in 0..n {
                assert_eq!(db.get(&key(i)).expect("get"), Some(value(i, 0)));
            }
            let mut scanned = 0;
            for e in db.iter(IterOptions::default()).expect("iter") {
                let (k, v) = e.expect("entry");
                if k != b"big" {
                    assert_eq!(db.get(&k).expect("get"), Some(v));
                }
                scanned += 1;
            }
            assert_eq!(scanned, n as usize + 1);
        };
        pass(&db);
        let first = reads_of(&db, ReadCause::Get);
        let first_scan = reads_of(&db, ReadCause::ScanValue);
        assert!(first > 0);
        // The scan's value reads count as its own cause, not as gets: with the cache only
        // the big value (never cached; the gets of the pass read every other one before the
        // scan), without it every value.
        let big_len = record_len(b"big", &big) as u64;
        if cache {
            assert_eq!(first_scan, big_len);
        } else {
            assert!(first_scan > big_len, "{first_scan}");
        }
        pass(&db);
        let second = reads_of(&db, ReadCause::Get) - first;
        let second_scan = reads_of(&db, ReadCause::ScanValue) - first_scan;
        if cache {
            // Only the big value, which the scan reads again.
            assert_eq!(second, 0, "cache {cache}");
            assert_eq!(second_scan, big_len, "cache {cache}");
        } else {
            assert!(second >= first, "cache {cache}: {second} < {first}");
            assert!(second_scan >= first_scan, "cache {cache}");
        }
        db.close().expect("close");
    }
}

#[test]
fn gets_count_the_blocks_they_read_by_kind() {
    use crate::env::{BlockKind, ReadCause};
    let env = Env::memory();
    let mut o = opts(&env, 0.5);
    o.block_cache_bytes = 0;
    let db = Db::open(DIR, o).expect("open");
    for i in 0..200 {
        db.put(&key(i), &value(i, 0)).expect("put");
    }
    db.flush().expect("flush");
    let blocks = |db: &Db| {
        let s = db.stats();
        BlockKind::ALL.map(|k| s.blocks_read_for(ReadCause::Get, k))
    };
    let before = blocks(&db);
    assert_eq!(db.get(&key(7)).expect("get"), Some(value(7, 0)));
    let after = blocks(&db);
    // One data block of the table, no filter block (the sst filter is in memory), one
    // value from the log.
    assert_eq!(
        [
            after[0] - before[0],
            after[1] - before[1],
            after[2] - before[2]
        ],
        [1, 0, 1]
    );
    assert_eq!(db.get(b"no such key").expect("get"), None);
    assert_eq!(blocks(&db), after, "the filter answers: nothing is read");
    let text = db.stats().to_string();
    assert!(
        text.contains("blocks read (not from the block cache): get data=1 value=1"),
        "{text}"
    );
    db.close().expect("close");
}

/// Bytes a file takes on disk (`st_blocks` is in 512-byte units).
#[cfg(target_os = "linux")]
fn disk_bytes(path: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).expect("stat").blocks() * 512
}

#[cfg(target_os = "linux")]
#[test]
fn collection_punches_out_a_dead_prefix_and_leaves_the_live_rest() {
    let dir = std::env::temp_dir().join(format!("shale-vlog-punch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut o = opts(&Env::posix(), 0.3);
    // Steps of 1 MiB (a quarter of a segment, at least `gc::MIN_STEP`).
    o.vlog_segment_size = 4 << 20;
    let big = |i: u32, round: u32| {
        let mut v = value(i, round);
        v.resize(4200, b'x');
        v
    };
    let n = 500;
    let db = Db::open(&dir, o.clone()).expect("open");
    // The first segment: keys 0..n, then n..2n (the live rest), past the segment size.
    for i in 0..2 * n {
        db.put(&key(i), &big(i, 0)).expect("put");
    }
    // The first half overwritten in the next segment: the first segment's prefix is dead.
    for i in 0..n {
        db.put(&key(i), &big(i, 1)).expect("put");
    }
    db.flush().expect("flush");
    let segs = db.stats().placement.segments;
    let first = segs.first().expect("a segment").0;
    assert!(segs.len() >= 2, "{segs:?}");
    let path = dir.join(crate::values::vlog::format::segment_file_name(first));
    let before = disk_bytes(&path);
    assert!(before >= 4 << 20, "{before}");
    // Automatic collection: it takes the dead prefix step by step and stops where the
    // rest is live, without rewriting it.
    assert_eq!(
        db.run_value_job(false).expect("gc"),
        0,
        "the segment is not dropped"
    );
    let steps = db.stats().placement.gc_steps;
    assert!(steps >= 1, "each step is counted in Stats: {steps}");
    let after = disk_bytes(&path);
    let prefix = u64::from(n) * record_len(&key(0), &big(0, 0)) as u64;
    assert!(
        before - after >= prefix - (1 << 20),
        "punching freed {} of a {prefix}-byte dead prefix ({before} -> {after} bytes)",
        before - after
    );
    assert!(path.exists(), "the live rest stays in place");
    let check_all = |db: &Db| {
        for i in 0..2 * n {
            let round = u32::from(i < n);
            assert_eq!(db.get(&key(i)).expect("get"), Some(big(i, round)), "{i}");
        }
        let scanned = db
            .iter(crate::IterOptions::default())
            .expect("iter")
            .count();
        assert_eq!(scanned, 2 * n as usize);
    };
    check_all(&db);
    // A second automatic run finds nothing worth collecting in the rest.
    assert_eq!(db.run_value_job(false).expect("gc"), 0);
    assert_eq!(disk_bytes(&path), after);
    db.close().expect("close");
    // The collected prefix is never read again: reopen, verify and read everything.
    let report = crate::verify(&dir, o.clone()).expect("verify");
    assert!(report.placement.records > 0);
    let db = Db::open(&dir, o.clone()).expect("reopen");
    check_all(&db);
    // A forced collection then takes the rest and drops the segment.
    while db.run_value_gc().expect("gc") > 0 {}
    assert!(!path.exists(), "dropped and deleted");
    check_all(&db);
    db.close().expect("close");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A store whose first segment's dead prefix collection punched out (and whose live rest
/// it left in place), the options of the punch test on a file system that zeros a punch.
fn punched_store(env: &Env) -> (Options, u32, impl Fn(u32, u32) -> Vec<u8>) {
    let mut o = opts(env, 0.3);
    o.vlog_segment_size = 4 << 20;
    let big = |i: u32, round: u32| {
        let mut v = value(i, round);
        v.resize(4200, b'x');
        v
    };
    let n = 500;
    let db = Db::open(DIR, o.clone()).expect("open");
    for i in 0..2 * n {
        db.put(&key(i), &big(i, 0)).expect("put");
    }
    for i in 0..n {
        db.put(&key(i), &big(i, 1)).expect("put");
    }
    db.flush().expect("flush");
    assert_eq!(
        db.run_value_job(false).expect("gc"),
        0,
        "the segment is not dropped"
    );
    assert!(db.stats().placement.gc_steps >= 1, "a prefix was collected");
    db.close().expect("close");
    (o, n, big)
}

#[test]
fn repair_without_the_manifest_skips_a_punched_prefix() {
    let env = Env::memory();
    let (o, n, big) = punched_store(&env);
    let fs = env.fs();
    let first = fs
        .list_dir(std::path::Path::new(DIR))
        .expect("list")
        .into_iter()
        .filter(|n| n.ends_with(".vlog"))
        .min()
        .expect("a segment");
    let seg = std::path::Path::new(DIR).join(&first);
    // The punch left zeros from byte 4096 on.
    let file = env.open(&seg).expect("open segment");
    let mut page = vec![1u8; 4096];
    file.read_exact_at(&mut page, 4096, crate::env::ReadCause::Recovery)
        .expect("read");
    assert!(page.iter().all(|&b| b == 0), "{first} was punched");
    for name in fs.list_dir(std::path::Path::new(DIR)).expect("list") {
        if name == "CURRENT" || name.starts_with("MANIFEST-") {
            fs.remove_file(&std::path::Path::new(DIR).join(name))
                .expect("remove");
        }
    }
    let report = crate::repair(DIR, o.clone()).expect("repair");
    assert!(report.set_aside.is_empty(), "{report:?}");
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.starts_with(&format!("{first}: skipped bytes"))),
        "{:?}",
        report.notes
    );
    let check_all = |db: &Db| {
        for i in 0..2 * n {
            let round = u32::from(i < n);
            assert_eq!(db.get(&key(i)).expect("get"), Some(big(i, round)), "{i}");
        }
    };
    crate::verify(DIR, o.clone()).expect("verify");
    let db = Db::open(DIR, o.clone()).expect("reopen");
    check_all(&db);
    // Collection goes on from the recorded prefix.
    while db.run_value_gc().expect("gc") > 0 {}
    check_all(&db);
    db.close().expect("close");
}

/// Session 15 left a window open: the sweep checks a segment's names, then punches; a
/// checkpoint that hard-links the segment in between gets a punched file. The test forces
/// that interleaving (a checkpoint taken inside `MemFs::punch_hole`, after its check) and
/// shows the copy is sound anyway: the sweep offers a prefix only after its commit, and a
/// checkpoint pins its segments before it links them, from its capture (under the
/// MANIFEST lock) on; so a checkpoint that links in the window captured after the commit,
/// and its own MANIFEST records the prefix as collected: it never reads the zeros.
#[test]
fn a_checkpoint_linking_a_segment_as_its_prefix_is_punched_reads_everything() {
    use std::sync::{Arc, Mutex};
    let mem = Arc::new(MemFs::new());
    let env = Env::new(mem.clone());
    let mut o = opts(&env, 0.3);
    o.vlog_segment_size = 4 << 20;
    let big = |i: u32, round: u32| {
        let mut v = value(i, round);
        v.resize(4200, b'x');
        v
    };
    let n = 500;
    let db = Arc::new(Db::open(DIR, o.clone()).expect("open"));
    for i in 0..2 * n {
        db.put(&key(i), &big(i, 0)).expect("put");
    }
    for i in 0..n {
        db.put(&key(i), &big(i, 1)).expect("put");
    }
    db.flush().expect("flush");
    let weak = Arc::downgrade(&db);
    let linked: Arc<Mutex<Option<std::path::PathBuf>>> = Arc::default();
    let seen = Arc::clone(&linked);
    mem.set_punch_hook(Some(Arc::new(move |path: &std::path::Path| {
        let mut seen = seen.lock().unwrap();
        if seen.is_none() {
            let db = weak.upgrade().expect("the store is open");
            let info = db.checkpoint("/cp").expect("checkpoint");
            assert!(info.files_linked > 0, "{info:?}");
            *seen = Some(std::path::Path::new("/cp").join(path.file_name().unwrap()));
        }
    })));
    assert_eq!(db.run_value_job(false).expect("gc"), 0);
    mem.set_punch_hook(None);
    let cp_segment = linked
        .lock()
        .unwrap()
        .clone()
        .expect("a checkpoint in the window");
    // The link shares the inode: the checkpoint's segment was punched too.
    let file = env.open(&cp_segment).expect("open the linked segment");
    let mut page = vec![1u8; 4096];
    file.read_exact_at(&mut page, 4096, crate::env::ReadCause::Recovery)
        .expect("read");
    assert!(page.iter().all(|&b| b == 0), "the punch reached the link");
    let check_all = |db: &Db| {
        for i in 0..2 * n {
            let round = u32::from(i < n);
            assert_eq!(db.get(&key(i)).expect("get"), Some(big(i, round)), "{i}");
        }
    };
    crate::verify("/cp", o.clone()).expect("verify the checkpoint");
    let cp = Db::open("/cp", o.clone()).expect("open the checkpoint");
    check_all(&cp);
    cp.close().expect("close");
    check_all(&db);
}

/// Segment files named in `advice`, with the hints they were given.
fn advised(fs: &MemFs, access: crate::env::Access) -> Vec<std::path::PathBuf> {
    fs.advice()
        .into_iter()
        .filter(|(p, a)| *a == access && p.to_string_lossy().ends_with(".vlog"))
        .map(|(p, _)| p)
        .collect()
}

#[test]
fn pointer_reads_advise_random_access_and_collection_sequential() {
    use crate::env::Access;
    let fs = MemFs::new();
    let env = Env::new(std::sync::Arc::new(fs.clone()));
    let mut o = opts(&env, 0.5);
    o.block_cache_bytes = 0;
    let db = Db::open(DIR, o).expect("open");
    let n = 200;
    for i in 0..n {
        db.put(&key(i), &value(i, 0)).expect("put");
    }
    db.flush().expect("flush");
    for i in 0..n {
        assert_eq!(db.get(&key(i)).expect("get"), Some(value(i, 0)));
    }
    // Every segment a pointer was read from has a handle advised random access, and
    // nothing was advised sequential yet.
    let random = advised(&fs, Access::Random);
    let segments = db.stats().placement.segments.len();
    assert!(segments > 2, "{segments} segments");
    let mut distinct = random.clone();
    distinct.sort();
    distinct.dedup();
    assert!(distinct.len() >= segments - 1, "{distinct:?}");
    assert!(advised(&fs, Access::Sequential).is_empty());
    // Collection scans a segment with a handle of its own, advised sequential: the
    // pointer reads' handles keep their advice.
    for i in 0..n {
        db.put(&key(i), &value(i, 1)).expect("put");
    }
    db.flush().expect("flush");
    assert!(db.run_value_job(true).expect("gc") > 0);
    let sequential = advised(&fs, Access::Sequential);
    assert!(!sequential.is_empty());
    assert!(
        sequential.iter().all(|p| distinct.contains(p)),
        "{sequential:?}"
    );
    assert_eq!(advised(&fs, Access::Random)[..random.len()], random[..]);
    for i in 0..n {
        assert_eq!(db.get(&key(i)).expect("get"), Some(value(i, 1)));
    }
    db.close().expect("close");
}

/// Scans over values in many segments, read from the files (no block cache) and from the
/// cache, through the prefetching cursor's own path and its pool: exactly the model's
/// entries, before and after collection moved the live values (and at a snapshot taken
/// before it).
#[test]
fn scans_over_many_segments_match_a_model_before_and_after_collection() {
    use std::collections::BTreeMap;
    for (cache, slow_read) in [(false, 10), (true, 10), (false, 0)] {
        let env = Env::memory();
        let mut o = opts(&env, 0.5);
        o.block_cache_bytes = if cache { 8 << 20 } else { 0 };
        // 0: every sequential scan hands its pointers to the pool.
        o.scan_prefetch_slow_read_micros = slow_read;
        let db = Db::open(DIR, o).expect("open");
        let mut model = BTreeMap::new();
        let n = 300;
        load_and_churn(&db, &mut model, n, value);
        let before: Vec<(Vec<u8>, Vec<u8>)> =
            model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        let check = |db: &Db, want: &[(Vec<u8>, Vec<u8>)], snap: Option<&crate::Snapshot>| {
            let (got, back) = scan_both_ways(db, snap);
            assert_eq!(got, want, "forward, cache {cache} slow_read {slow_read}");
            assert_eq!(back, want, "backward, cache {cache} slow_read {slow_read}");
        };
        check(&db, &before, None);
        let snap = db.snapshot();
        let mut collected = 0;
        while let n @ 1.. = db.run_value_job(true).expect("gc") {
            collected += n;
        }
        assert!(collected > 0, "cache {cache}: nothing collected");
        check(&db, &before, None);
        // Still the same after the relocated copies reach a table.
        db.flush().expect("flush");
        check(&db, &before, None);
        check(&db, &before, Some(&snap));
        drop(snap);
        db.close().expect("close");
    }
}

/// A store's contents in key order.
pub(super) type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// Every entry (at `snap`) by a forward scan and by a backward one, both in key order.
pub(super) fn scan_both_ways(db: &Db, snap: Option<&crate::Snapshot>) -> (Entries, Entries) {
    let io = crate::IterOptions {
        snapshot: snap.cloned(),
        ..crate::IterOptions::default()
    };
    let forward: Entries = db
        .iter(io.clone())
        .expect("iter")
        .map(|e| e.expect("entry"))
        .collect();
    let mut back: Entries = db
        .iter(io)
        .expect("iter")
        .rev()
        .map(|e| e.expect("entry"))
        .collect();
    back.reverse();
    (forward, back)
}

/// Keys `0..n` written in an order unlike key order (so key-adjacent values are far apart in
/// the log, as with hashed keys) with `value(i, 0)` and flushed; then a third deleted and a
/// third overwritten with `value(i, 1)`, flushed; `model` follows.
pub(super) fn load_and_churn(
    db: &Db,
    model: &mut std::collections::BTreeMap<Vec<u8>, Vec<u8>>,
    n: u32,
    value: impl Fn(u32, u32) -> Vec<u8>,
) {
    for j in 0..n {
        let i = (j * 7919) % n;
        db.put(&key(i), &value(i, 0)).expect("put");
        model.insert(key(i), value(i, 0));
    }
    db.flush().expect("flush");
    for i in (0..n).filter(|i| i % 3 != 1) {
        if i % 3 == 0 {
            db.delete(&key(i)).expect("delete");
            model.remove(&key(i));
        } else {
            db.put(&key(i), &value(i, 1)).expect("put");
            model.insert(key(i), value(i, 1));
        }
    }
    db.flush().expect("flush");
}

#[test]
fn values_kept_in_the_memtable_are_read_from_it_and_flushed_as_pointers() {
    use crate::env::ReadCause;
    let env = Env::memory();
    let o = opts(&env, 0.5);
    assert_eq!(
        o.vlog_memtable_value_max, 1024,
        "the preset keeps values up to 1 KiB"
    );
    let db = Db::open(DIR, o.clone()).expect("open");
    let n = 200;
    for i in 0..n {
        db.put(&key(i), &value(i, 0)).expect("put");
    }
    db.flush().expect("flush");
    // The second round stays in the memtable, each value beside its pointer.
    for i in 0..n {
        db.put(&key(i), &value(i, 1)).expect("put");
    }
    let want: Entries = (0..n).map(|i| (key(i), value(i, 1))).collect();
    let value_reads =
        |env: &Env| env.io().read(ReadCause::Get) + env.io().read(ReadCause::ScanValue);
    let before = value_reads(&env);
    for i in 0..n {
        assert_eq!(db.get(&key(i)).expect("get"), Some(value(i, 1)), "{i}");
    }
    let (got, back) = scan_both_ways(&db, None);
    assert_eq!((&got, &back), (&want, &want));
    assert_eq!(
        value_reads(&env),
        before,
        "the memtable's values are read from it"
    );
    // Flushed, the entries become bare pointers (which `verify` below accepts: it refuses
    // bytes after a pointer). The flush counts every record of the first round as
    // superseded, as with bare pointers in the memtable, and collection drops them all.
    db.flush().expect("flush");
    let first_round: u64 = (0..n)
        .map(|i| record_len(&key(i), &value(i, 0)) as u64)
        .sum();
    assert_eq!(total_garbage(&db), first_round);
    let value_reads_before = value_reads(&env);
    for i in 0..n {
        assert_eq!(db.get(&key(i)).expect("get"), Some(value(i, 1)), "{i}");
    }
    assert!(
        value_reads(&env) > value_reads_before,
        "read from the log once flushed"
    );
    let mut collected = 0;
    while let n @ 1.. = db.run_value_job(true).expect("gc") {
        collected += n;
    }
    assert!(collected > 0, "nothing collected");
    let (got, back) = scan_both_ways(&db, None);
    assert_eq!((&got, &back), (&want, &want));
    db.close().expect("close");
    let report = crate::design::verify(DIR, o.clone()).expect("verify");
    assert!(report.placement.pointers > 0, "{report:?}");
    let db = Db::open(DIR, o).expect("reopen");
    let (got, _) = scan_both_ways(&db, None);
    assert_eq!(got, want);
    db.close().expect("close");
}
