//! Value-log reads through memory maps of sealed segments (`Options::mmap_reads`) on the
//! real file system: the same answers as `pread` across collection, punching and reopen;
//! damage found and named; maps released with their segments.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "a test helper's failure is a test failure"
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::db::testutil::settle;
use crate::env::Env;
use crate::env::posix::PosixFs;
use crate::options::Options;
use crate::values::vlog::db_tests::{Entries, load_and_churn, scan_both_ways};
use crate::values::vlog::format::{HEADER_LEN, record_len, segment_file_name};
use crate::{Db, Error, IterOptions};

/// A fresh directory for one test.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("shale-vmap-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// The value-log segments of `dir` this process has mapped for reads now, from
/// `/proc/self/maps` (one line per mapping; a deleted file's line ends in `(deleted)`).
/// The writer's map of the segment it appends to (`Options::mmap_log_writes`) is
/// writable (`rw-s`) and not counted.
fn segment_maps(dir: &Path) -> Vec<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").expect("read /proc/self/maps");
    let dir = dir.to_string_lossy().into_owned();
    maps.lines()
        .filter(|l| l.contains(&dir) && l.contains(".vlog"))
        .filter(|l| {
            l.split_whitespace()
                .nth(1)
                .is_some_and(|perms| perms.starts_with("r-"))
        })
        .map(str::to_owned)
        .collect()
}

/// Options over `fs` with small segments, no block cache (every value read reaches its
/// segment) and collection driven by hand.
fn opts(fs: &PosixFs, mmap: bool, segment: u64) -> Options {
    let mut o = Options::preset("wisckey").expect("preset");
    o.env = Env::new(Arc::new(fs.clone()));
    o.mmap_reads = mmap;
    o.block_cache_bytes = 0;
    o.write_buffer_size = 4 << 20;
    o.vlog_segment_size = segment;
    o.min_separated_value_size = 64;
    o.vlog_gc = false;
    o.vlog_gc_ratio = 0.3;
    o.vlog_gc_bytes_per_sec = 0;
    // Every sequential scan hands its pointers to the prefetch pool too.
    o.scan_prefetch_slow_read_micros = 0;
    o
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn value(i: u32, round: u32, len: usize) -> Vec<u8> {
    let mut v = format!("v{i}-{round}-").into_bytes();
    v.resize(len + (i as usize % 7) * 50, b'a' + (round % 26) as u8);
    v
}

/// Every key of `0..n` by get, and the whole store by a forward and a backward scan (and
/// at `snap`), against `model`.
fn check(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, n: u32, snap: Option<&crate::Snapshot>) {
    for i in 0..n {
        let got = match snap {
            Some(s) => db.get_at(&key(i), s),
            None => db.get(&key(i)),
        };
        assert_eq!(got.expect("get").as_ref(), model.get(&key(i)), "key {i}");
    }
    let want: Entries = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    let (got, back) = scan_both_ways(db, snap);
    assert_eq!(got, want, "forward scan");
    assert_eq!(back, want, "backward scan");
}

/// One run of the model workload over a fresh store: several sealed segments, overwrites
/// and deletes, forced collection (at a snapshot taken before it, too), a reopen. Returns
/// what each stage read and how many segment maps were seen while the store was open.
fn model_run(name: &str, mmap: bool, map_limit: usize) -> (Vec<Entries>, usize) {
    let dir = temp_dir(name);
    let fs = PosixFs::with_map_limit(map_limit);
    let o = opts(&fs, mmap, 64 << 10);
    let n = 400;
    let mut model = BTreeMap::new();
    let mut seen = Vec::new();
    let mut most_maps = 0;
    let db = Db::open(&dir, o.clone()).expect("open");
    load_and_churn(&db, &mut model, n, |i, round| {
        value(i, round, 1000 - 100 * round as usize)
    });
    assert!(db.stats().placement.segments.len() >= 6, "several segments");
    check(&db, &model, n, None);
    most_maps = most_maps.max(segment_maps(&dir).len());
    assert!(fs.mapped_files() <= map_limit, "the budget holds");
    seen.push(model.clone());
    let snap = db.snapshot();
    let before = model.clone();
    let mut collected = 0;
    while let k @ 1.. = db.run_value_job(true).expect("gc") {
        collected += k;
    }
    assert!(collected > 0, "collection dropped segments");
    check(&db, &model, n, None);
    check(&db, &before, n, Some(&snap));
    drop(snap);
    db.flush().expect("flush");
    settle(&db);
    while db.run_value_job(true).expect("gc") > 0 {}
    check(&db, &model, n, None);
    most_maps = most_maps.max(segment_maps(&dir).len());
    // Segments collection dropped are deleted and their maps released: no mapping of a
    // deleted segment file stays (a held map would show as "(deleted)").
    let live: Vec<String> = db
        .stats()
        .placement
        .segments
        .iter()
        .map(|s| segment_file_name(s.0))
        .collect();
    for line in segment_maps(&dir) {
        assert!(
            !line.ends_with("(deleted)"),
            "a dropped segment is still mapped: {line}"
        );
        assert!(live.iter().any(|l| line.contains(l.as_str())), "{line}");
    }
    seen.push(model.clone());
    db.close().expect("close");
    assert_eq!(segment_maps(&dir), Vec::<String>::new(), "closing unmaps");
    assert_eq!(fs.mapped_files(), 0, "closing gives the budget back");
    let db = Db::open(&dir, o).expect("reopen");
    check(&db, &model, n, None);
    most_maps = most_maps.max(segment_maps(&dir).len());
    seen.push(model.clone());
    db.close().expect("close");
    let _ = std::fs::remove_dir_all(&dir);
    let seen = seen.into_iter().map(|m| m.into_iter().collect()).collect();
    (seen, most_maps)
}

#[test]
fn value_reads_through_maps_give_what_pread_gives_across_collection_and_reopen() {
    let (pread, no_maps) = model_run("pread", false, 1000);
    assert_eq!(no_maps, 0, "mmap_reads off maps no segment");
    let (mapped, maps) = model_run("mapped", true, 1000);
    assert!(
        maps >= 2,
        "sealed segments are read through maps ({maps} seen)"
    );
    assert_eq!(mapped, pread);
    // A budget of one map: the rest are read with pread, with the same answers.
    let (tight, maps) = model_run("tight", true, 1);
    assert!(maps <= 1, "{maps}");
    assert_eq!(tight, pread);
}

/// Bytes a file takes on disk (`st_blocks` is in 512-byte units).
fn disk_bytes(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).expect("stat").blocks() * 512
}

#[test]
fn collection_punches_the_prefix_of_a_mapped_segment_while_its_rest_is_read_through_the_map() {
    let dir = temp_dir("punch");
    let fs = PosixFs::with_map_limit(1000);
    // Collection steps of 1 MiB (a quarter of a segment, at least `gc::MIN_STEP`).
    let o = opts(&fs, true, 4 << 20);
    let big = |i: u32, round: u32| value(i, round, 4200);
    let n = 500;
    let db = Db::open(&dir, o).expect("open");
    // The first segment: keys 0..n, then n..2n (the live rest), past the segment size;
    // then the first half overwritten in the next segment: the first segment's prefix is
    // dead.
    for i in 0..2 * n {
        db.put(&key(i), &big(i, 0)).expect("put");
    }
    for i in 0..n {
        db.put(&key(i), &big(i, 1)).expect("put");
    }
    db.flush().expect("flush");
    let first = db.stats().placement.segments[0].0;
    let name = segment_file_name(first);
    let path = dir.join(&name);
    let check_all = |db: &Db| {
        for i in 0..2 * n {
            let round = u32::from(i < n);
            assert_eq!(db.get(&key(i)).expect("get"), Some(big(i, round)), "{i}");
        }
        assert_eq!(
            db.iter(IterOptions::default()).expect("iter").count(),
            2 * n as usize
        );
    };
    // Reads of the live rest map the first segment before collection starts.
    check_all(&db);
    let mapped = |dir: &Path| {
        segment_maps(dir)
            .iter()
            .filter(|l| l.contains(&name))
            .count()
    };
    assert_eq!(
        mapped(&dir),
        1,
        "the sealed first segment is read through a map"
    );
    let before = disk_bytes(&path);
    // Automatic collection takes the dead prefix step by step and punches it out of the
    // mapped file; the live rest stays in place.
    assert_eq!(
        db.run_value_job(false).expect("gc"),
        0,
        "the segment is not dropped"
    );
    assert!(db.stats().placement.gc_steps >= 1);
    settle(&db);
    let after = disk_bytes(&path);
    if after >= before {
        eprintln!("skipped: the file system did not punch ({before} -> {after} bytes)");
        db.close().expect("close");
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    // The same map (never dropped: the handle is cached) serves the rest after the punch.
    assert_eq!(mapped(&dir), 1);
    check_all(&db);
    // The punched pages read as zeros (through the file; the map is never read there).
    let bytes = std::fs::read(&path).expect("read");
    assert!(
        bytes[4096..1 << 20].iter().all(|&b| b == 0),
        "the prefix was punched"
    );
    db.close().expect("close");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A store in `dir` with `o` holding keys `0..n`, flushed and closed, with one bit of key
/// 0's record (the first segment's first) flipped in its value (the record's tail).
/// Returns the segment's number and path.
fn flip_key0(dir: &Path, o: &Options, n: u32) -> (u64, PathBuf) {
    let db = Db::open(dir, o.clone()).expect("open");
    for i in 0..n {
        db.put(&key(i), &value(i, 0, 1000)).expect("put");
    }
    db.flush().expect("flush");
    let first = db.stats().placement.segments[0].0;
    db.close().expect("close");
    let path = dir.join(segment_file_name(first));
    let mut bytes = std::fs::read(&path).expect("read");
    let last = HEADER_LEN as usize + record_len(&key(0), &value(0, 0, 1000)) - 1;
    bytes[last] ^= 0x10;
    std::fs::write(&path, &bytes).expect("write");
    (first, path)
}

#[test]
fn a_flipped_bit_in_a_mapped_segment_is_corruption_naming_the_segment_and_offset() {
    let dir = temp_dir("flip");
    let fs = PosixFs::with_map_limit(1000);
    let o = opts(&fs, true, 16 << 10);
    let (first, path) = flip_key0(&dir, &o, 40);
    let db = Db::open(&dir, o).expect("reopen");
    match db.get(&key(0)) {
        Err(Error::Corruption { file, offset, .. }) => {
            assert_eq!(file, path);
            assert_eq!(offset, HEADER_LEN);
        }
        other => panic!("expected corruption, got {other:?}"),
    }
    assert_eq!(
        segment_maps(&dir)
            .iter()
            .filter(|l| l.contains(&segment_file_name(first)))
            .count(),
        1,
        "read through the segment's map"
    );
    // Its neighbours read fine.
    assert_eq!(db.get(&key(1)).expect("get"), Some(value(1, 0, 1000)));
    db.close().expect("close");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The segment being appended to is read through a map of its file as it stands, mapped
/// again when reads reach records appended since; a store smaller than one segment (all
/// its values in the active segment) reads no value with `pread`.
#[test]
fn the_segment_being_appended_to_is_read_through_a_map_that_follows_it() {
    let dir = temp_dir("active");
    let fs = PosixFs::with_map_limit(1000);
    let o = opts(&fs, true, 256 << 20);
    let db = Db::open(&dir, o).expect("open");
    let big = |i: u32| value(i, 0, 4000);
    let mut n = 0;
    // Rounds of writes, each read back whole: later rounds run past the file's end (and
    // its reserved space) as it was when it was last mapped.
    for round in 0..4 {
        for _ in 0..1500 {
            db.put(&key(n), &big(n)).expect("put");
            n += 1;
        }
        for i in 0..n {
            assert_eq!(
                db.get(&key(i)).expect("get"),
                Some(big(i)),
                "round {round} key {i}"
            );
        }
        let it = db.iter(IterOptions::default()).expect("iter");
        assert_eq!(it.count(), n as usize);
        assert_eq!(
            db.stats().placement.segments.len(),
            1,
            "one segment, still active"
        );
        let maps = segment_maps(&dir);
        assert!(
            !maps.is_empty() && maps.iter().all(|l| !l.ends_with("(deleted)")),
            "the active segment is read through a map: {maps:?}"
        );
    }
    let io = db.stats();
    assert!(io.blocks_read_for(crate::env::ReadCause::Get, crate::env::BlockKind::Value) > 0);
    db.close().expect("close");
    assert_eq!(fs.mapped_files(), 0, "closing gives the budget back");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A store of `n` values of 1000 bytes (about three times a 1 MiB block cache) read back
/// with its pointers replayed into the memtable (closed, not flushed: no table block takes
/// room in the cache), its segments sealed and read through maps when `mmap`.
fn reopened_store(name: &str, mmap: bool, n: u32) -> (PathBuf, Db) {
    let dir = temp_dir(name);
    let fs = PosixFs::with_map_limit(1000);
    let mut o = opts(&fs, mmap, 1 << 20);
    o.block_cache_bytes = 1 << 20;
    o.scan_prefetch_threads = 0;
    let db = Db::open(&dir, o.clone()).expect("open");
    for i in 0..n {
        db.put(&key(i), &value(i, 0, 1000)[..1000]).expect("put");
    }
    db.close().expect("close");
    let db = Db::open(&dir, o).expect("reopen");
    assert_eq!(db.stats().block_cache_bytes, 0, "nothing cached yet");
    (dir, db)
}

/// Scan the whole store (checking every value); the block cache's hits during the scan.
fn scan_hits(db: &Db, n: u32, read: crate::ReadOptions) -> u64 {
    let before = db.stats().block_cache_hits;
    let it = db
        .iter(IterOptions {
            read,
            ..IterOptions::default()
        })
        .expect("iter");
    let mut i = 0;
    for item in it {
        let (k, v) = item.expect("scan");
        assert_eq!(
            (k, v),
            (key(i), value(i, 0, 1000)[..1000].to_vec()),
            "key {i}"
        );
        i += 1;
    }
    assert_eq!(i, n);
    db.stats().block_cache_hits - before
}

#[test]
fn scans_of_mapped_segments_fill_the_cache_but_never_evict_from_it() {
    // A scan's record copied out of a mapped segment is kept only while the cache has room
    // (`reader::keep`): the first scan fills the cache, and later scans of the same store
    // find the same records there instead of pushing each other's out.
    let n = 3000;
    let (dir, db) = reopened_store("scanfill", true, n);
    let capacity = 1 << 20;
    let charge = (crate::values::vlog::format::RECORD_HEADER_LEN
        + 8
        + 1000
        + crate::cache::block_cache::ENTRY_OVERHEAD) as u64;
    scan_hits(&db, n, crate::ReadOptions::default());
    let full = db.stats().block_cache_bytes;
    assert!(
        full <= capacity && full + 2 * charge > capacity,
        "filled: {full}"
    );
    // Every later scan hits the records the first one kept (most of the cache: the rest
    // is the blocks of the table recovery wrote, which the scans read too). Were they
    // kept as a lookup keeps them, each scan would push out the records the one before it
    // kept before it came back to them (none would be found, as with `pread` below).
    for round in 0..2 {
        let hits = scan_hits(&db, n, crate::ReadOptions::default());
        assert!(hits > full / charge * 3 / 4, "round {round}: {hits} hits");
        let now = db.stats().block_cache_bytes;
        assert!(
            now <= capacity && now + 2 * charge > capacity,
            "round {round}: {now}"
        );
    }
    // A point lookup still keeps what it reads, evicting for it.
    let misses = db.stats().block_cache_misses;
    let uncached = (0..n)
        .find(|&i| {
            db.get(&key(i)).expect("get");
            db.stats().block_cache_misses > misses
        })
        .expect("most records are not cached");
    let hits = db.stats().block_cache_hits;
    db.get(&key(uncached)).expect("get");
    assert_eq!(
        db.stats().block_cache_hits,
        hits + 1,
        "the lookup's record was kept"
    );
    assert!(db.stats().block_cache_bytes <= capacity);
    db.close().expect("close");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn scans_read_with_pread_keep_what_they_read_and_fill_cache_off_keeps_nothing() {
    // `mmap_reads` off: a record read again costs a system call, so a scan keeps it as a
    // lookup does (evicting): a scan over three times the cache pushes out what the scan
    // before it kept before it comes back to it.
    let n = 3000;
    let (dir, db) = reopened_store("scanpread", false, n);
    scan_hits(&db, n, crate::ReadOptions::default());
    assert!(db.stats().block_cache_bytes > (1 << 20) / 2);
    assert!(scan_hits(&db, n, crate::ReadOptions::default()) < 50);
    db.close().expect("close");
    let _ = std::fs::remove_dir_all(&dir);
    // `ReadOptions::fill_cache` off: neither a scan nor a lookup keeps a value, mapped or
    // not.
    for mmap in [true, false] {
        let (dir, db) = reopened_store("scanskip", mmap, 300);
        let skip = crate::ReadOptions {
            fill_cache: false,
            ..crate::ReadOptions::default()
        };
        assert_eq!(scan_hits(&db, 300, skip), 0);
        assert_eq!(
            db.get_opt(&key(7), None, skip).expect("get"),
            Some(value(7, 0, 1000)[..1000].to_vec())
        );
        assert_eq!(db.stats().block_cache_bytes, 0, "mmap {mmap}");
        // On by default: the same reads keep them.
        scan_hits(&db, 300, crate::ReadOptions::default());
        assert!(db.stats().block_cache_bytes > 0);
        db.close().expect("close");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn a_damaged_record_a_scan_reads_past_a_full_cache_is_corruption_naming_segment_and_offset() {
    // The record is read and checked where the cache has no room for it (it is not kept):
    // the checksum still runs, and the error names the segment file and the record.
    let dir = temp_dir("scanflip");
    let fs = PosixFs::with_map_limit(1000);
    let mut o = opts(&fs, true, 1 << 20);
    o.block_cache_bytes = 16 << 10;
    o.scan_prefetch_threads = 0;
    let n = 60;
    let (_, path) = flip_key0(&dir, &o, n);
    let db = Db::open(&dir, o).expect("reopen");
    let from_one = IterOptions {
        lower_bound: Some(key(1)),
        ..IterOptions::default()
    };
    let rest = db
        .iter(from_one)
        .expect("iter")
        .collect::<crate::Result<Vec<_>>>();
    assert_eq!(rest.expect("the rest is whole").len(), n as usize - 1);
    let full = db.stats().block_cache_bytes;
    assert!(full + 2 * 1100 > 16 << 10, "the cache is full: {full}");
    match db.iter(IterOptions::default()).expect("iter").next() {
        Some(Err(Error::Corruption { file, offset, .. })) => {
            assert_eq!(file, path);
            assert_eq!(offset, HEADER_LEN);
        }
        other => panic!("expected corruption, got {other:?}"),
    }
    assert_eq!(
        db.stats().block_cache_bytes,
        full,
        "nothing kept or evicted"
    );
    db.close().expect("close");
    let _ = std::fs::remove_dir_all(&dir);
}
