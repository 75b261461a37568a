//! Stores written by an earlier release still open and read back.
//!
//! `tests/fixtures/v0/` holds one small store per design, written by the release before
//! the MANIFEST carried each axis's state in its own records (commit 501cf97): the
//! `leveldb` store has tables in several levels and a WAL with unflushed writes, the
//! `pebblesdb` store has guards at several levels, the `wisckey` store has sealed, dropped
//! and garbage-counted value-log segments and an unflushed tail. Every test copies a
//! fixture to a fresh directory (an open writes a new MANIFEST), opens it, and checks its
//! whole contents against [`model`], which regenerates what the writer put there.
//!
//! To write the fixtures again (only when a new format generation is frozen, in a new
//! folder), run `cargo test -p shale --test fixture_stores -- --ignored write_fixtures`.

#![allow(
    clippy::unwrap_used,
    reason = "a test helper's failure is a test failure"
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use shale::{Db, IterOptions, Options, WriteBatch};

/// The designs with a fixture.
const DESIGNS: [&str; 3] = ["leveldb", "pebblesdb", "wisckey"];

fn fixture_dir(design: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/v0")
        .join(design)
}

/// Small options that spread a few thousand keys over several files and levels.
fn options(design: &str) -> Options {
    let mut o = Options::preset(design).unwrap();
    o.write_buffer_size = 16 * 1024;
    o.target_file_size = 8 * 1024;
    o.max_bytes_for_level_base = 32 * 1024;
    o.max_background_compactions = 1;
    o.flsm.top_level_bits = 6;
    o.flsm.bit_decrement = 1;
    o.flsm.max_sstables_per_guard = 2;
    o.min_separated_value_size = 64;
    o.vlog_segment_size = 32 * 1024;
    o.vlog_gc_ratio = 0.2;
    o.vlog_gc = false;
    o
}

fn key(i: u32) -> Vec<u8> {
    format!("key{:05}", i).into_bytes()
}

/// The value of key `i` written in `round`: long enough to be separated in the value log
/// for every third key, short for the others.
fn value(i: u32, round: u32) -> Vec<u8> {
    let len = if i.is_multiple_of(3) { 100 } else { 20 };
    let mut v = format!("v{round}-{i}-").into_bytes();
    v.resize(len, b'a' + (i % 26) as u8);
    v
}

/// The writes, in order, and what the store holds after them. Three rounds overwrite and
/// delete keys (so the tree holds garbage and tombstones), with a flush and a full
/// compaction in between; the last round stays in the log, unflushed.
fn writes() -> Vec<(u32, Option<u32>)> {
    let mut w = Vec::new();
    for round in 0..3u32 {
        for j in 0..1200u32 {
            let i = (j * 7 + round * 13) % 1500;
            let deleted = (i + round) % 11 == 0;
            w.push((i, (!deleted).then_some(round)));
        }
    }
    w
}

fn model() -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut m = BTreeMap::new();
    for (i, round) in writes() {
        match round {
            Some(r) => m.insert(key(i), value(i, r)),
            None => m.remove(&key(i)),
        };
    }
    m
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

fn temp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("shale-fixture-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    p
}

fn contents(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    db.iter(IterOptions::default())
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

#[test]
fn v0_stores_open_and_read_back() {
    let expected = model();
    for design in DESIGNS {
        let dir = temp(design);
        copy_dir(&fixture_dir(design), &dir);
        let db = Db::open(&dir, options(design)).unwrap();
        assert_eq!(contents(&db), expected, "{design}: scan after open");
        for (k, v) in expected.iter().step_by(37) {
            assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{design}: get {k:?}");
        }
        // The store keeps working: writes, a flush, a compaction and a reopen.
        db.put(b"after", b"upgrade").unwrap();
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        db.close().unwrap();
        let db = Db::open(&dir, options(design)).unwrap();
        let mut want = expected.clone();
        want.insert(b"after".to_vec(), b"upgrade".to_vec());
        assert_eq!(contents(&db), want, "{design}: after reopen");
        db.close().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// A store written before options records existed has none: `load_options` gives its
/// design's axes from its format tag, and the first open records the options it ran with.
#[test]
fn v0_stores_load_their_design_then_record_their_options() {
    for design in DESIGNS {
        let dir = temp(&format!("load-{design}"));
        copy_dir(&fixture_dir(design), &dir);
        let loaded = shale::load_options(&dir, Options::default()).unwrap();
        assert_eq!(
            loaded.axes(),
            Options::preset(design).unwrap().axes(),
            "{design}"
        );
        // Nothing else is recorded yet: the rest is the base's.
        assert_eq!(
            loaded.write_buffer_size,
            Options::default().write_buffer_size
        );
        let db = Db::open(&dir, options(design)).unwrap();
        db.close().unwrap();
        let loaded = shale::load_options(&dir, Options::default()).unwrap();
        assert_eq!(loaded.write_buffer_size, 16 * 1024, "{design}");
        assert_eq!(loaded.flsm.top_level_bits, 6, "{design}");
        assert_eq!(loaded.min_separated_value_size, 64, "{design}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// The fixtures hold what their comments promise: otherwise the test above proves less.
#[test]
fn v0_fixtures_hold_the_state_they_are_meant_to_test() {
    let names = |d: &str| -> Vec<String> {
        std::fs::read_dir(fixture_dir(d))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect()
    };
    let count = |d: &str, ext: &str| names(d).iter().filter(|n| n.ends_with(ext)).count();
    for d in DESIGNS {
        assert!(count(d, ".sst") >= 3, "{d}: tables");
        assert!(names(d).iter().any(|n| n == "CURRENT"), "{d}: CURRENT");
    }
    assert!(count("leveldb", ".log") >= 1, "leveldb: a WAL to replay");
    assert!(
        count("pebblesdb", ".log") >= 1,
        "pebblesdb: a WAL to replay"
    );
    assert!(
        count("wisckey", ".vlog") >= 2,
        "wisckey: value-log segments"
    );
    // The guards the flsm store recorded come back (the MANIFEST's guard fields are read).
    let dir = temp("guards");
    copy_dir(&fixture_dir("pebblesdb"), &dir);
    let db = Db::open(&dir, options("pebblesdb")).unwrap();
    let guards: usize = (1..7)
        .filter_map(|l| db.property(&format!("shale.num-guards-at-level{l}")))
        .map(|n| n.parse::<usize>().unwrap())
        .sum();
    assert!(guards >= 4, "pebblesdb: {guards} guards");
    db.close().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    // The value-log store counted garbage in its segments (the MANIFEST's garbage fields).
    let dir = temp("garbage");
    copy_dir(&fixture_dir("wisckey"), &dir);
    let db = Db::open(&dir, options("wisckey")).unwrap();
    let segments = db.stats().placement.segments;
    assert!(
        segments.iter().filter(|s| s.2 > 0).count() >= 1,
        "wisckey: {segments:?}"
    );
    db.close().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Writes the fixtures (see the module documentation). Not a test: run by hand.
#[test]
#[ignore = "writes tests/fixtures; run by hand when freezing a format generation"]
fn write_fixtures() {
    for design in DESIGNS {
        let dir = fixture_dir(design);
        let _ = std::fs::remove_dir_all(&dir);
        let db = Db::open(&dir, options(design)).unwrap();
        let w = writes();
        for (n, chunk) in w.chunks(1200).enumerate() {
            let mut batch = WriteBatch::new();
            for (k, (i, round)) in chunk.iter().enumerate() {
                match round {
                    Some(r) => batch.put(&key(*i), &value(*i, *r)),
                    None => batch.delete(&key(*i)),
                }
                if k % 50 == 49 {
                    db.write(std::mem::take(&mut batch)).unwrap();
                }
            }
            db.write(batch).unwrap();
            match n {
                0 => db.flush().unwrap(),
                1 => {
                    db.compact_range(None, None).unwrap();
                    if design == "wisckey" {
                        db.run_value_gc().unwrap();
                    }
                }
                _ => {}
            }
        }
        // No close: the last round stays in the log for the next open to replay, as after a
        // process crash. Dropping the handle stops its threads and releases the lock.
        drop(db);
        let _ = std::fs::remove_file(dir.join("LOCK"));
    }
}
