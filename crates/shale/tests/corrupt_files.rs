//! Bit flips in every kind of file a store holds: CURRENT, MANIFEST, WAL and tables at
//! several levels.
//!
//! One store is built in memory and its files are read once. For each flip a fresh in-memory
//! file system receives every file, one of them with one bit flipped, and then:
//! - `shale::verify` must return `Error::Corruption` naming the flipped file, or succeed;
//!   for a table it must always find the flip (every byte of a table is checksummed),
//! - `Db::open`, a `get` of every key and a full scan must each either return
//!   `Error::Corruption` naming the flipped file, or give correct values: the model's state,
//!   or (for a flip in the value log's last record, which is indistinguishable from a torn
//!   tail) the state after a prefix of the logged writes. The store was closed cleanly, so
//!   its WAL is known complete (`docs/format/wal.md` §4): a flip anywhere in it, the last
//!   record included, must be detected (issue 17, case 3).
//!
//! Never a wrong value, never a panic (a panic hook catches those of background threads
//! too). Run with `SHALE_FLIP_STRIDE=1` to flip every byte of every file (slow).

#![expect(clippy::unwrap_used, reason = "test setup failures fail the test")]

use std::collections::{BTreeMap, BTreeSet};
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once};

use shale::env::mem::MemFs;
use shale::env::{Env, FileSystem, ReadCause};
use shale::{Compression, Db, Error, IterOptions, Options};

const DIR: &str = "/db";

type Map = BTreeMap<Vec<u8>, Vec<u8>>;

fn opts(env: &Env, design: &str, compression: Compression) -> Options {
    let mut o = Options::preset(design).unwrap().with_env(env.clone());
    // FLSM: guards among the few hundred keys (about one key in 64 a level-1 guard, one in
    // 16 a level-2 guard), so reads cross guard ranges. Not denser: every table costs 400
    // flips of its tail and more MANIFEST bytes to flip, and at 4 bits (one key in 4 a
    // level-2 guard) the manual compaction cut level 2 into about 30 tables of a few keys
    // each, 56 tables in all, which made this image cost more than all the other designs'
    // together (issue 19). Level-2 guards every 16 keys still give every file kind at
    // every level, in about 20 tables.
    o.flsm.top_level_bits = 6;
    if design == "wisckey" {
        // Most values separated, segments of a few KiB, no background collection.
        o.min_separated_value_size = 24;
        o.vlog_segment_size = 16 * 1024;
        o.vlog_gc = false;
    }
    o.table.compression = compression;
    o.write_buffer_size = 32 * 1024;
    o.target_file_size = 8 * 1024;
    o.max_bytes_for_level_base = 16 * 1024;
    o.table.block_size = 256;
    o.block_cache_bytes = 0;
    // The reads of each damaged image must not reshape its tree: seek-triggered compaction
    // (the leveled layout's and the lwc layout's) would compact the damaged table they
    // charge and fail (the store then refuses writes, as it must after a failed compaction).
    o.leveled.seek_compaction = false;
    o.lwc.seek_compaction = false;
    if design == "lwc" {
        // Tables grown by appends stay below the division threshold, so the settled image
        // still holds tables of several segments (older commit records to flip). New tables
        // are still 4 KiB (`target_file_size / lwc.division`, at least 4 KiB).
        o.target_file_size = 32 * 1024;
    }
    o
}

/// Wait until `db` is settled: no memtable waits for its flush, no compaction runs and the
/// background found nothing more to start. The image must be taken in that state: work left
/// over would run again at every open of a damaged copy, and a compaction that reads the
/// damaged table fails and turns the store read-only (as it must: LevelDB and RocksDB do
/// too), which is not what this test checks.
fn settle(db: &Db) {
    db.wait_for_compactions().unwrap();
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn value(i: u32, round: u32) -> Vec<u8> {
    let len = 8 + (i * 7 + round * 13) % 40;
    let mut v = format!("v{i}.{round}:").into_bytes();
    v.resize(len as usize, b'a' + (i % 26) as u8);
    v
}

/// The store's files, the model before the last log's writes, and those writes in order.
struct Image {
    design: &'static str,
    compression: Compression,
    files: Vec<(PathBuf, Vec<u8>)>,
    base: Map,
    wal_ops: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

impl Image {
    fn build(design: &'static str, compression: Compression) -> Image {
        let mem = MemFs::new();
        let env = Env::new(Arc::new(mem.clone()));
        // Round 0 goes into one memtable (the write buffer may change between opens), so no
        // background compaction races the writes: the tree the manual compaction builds from
        // it is the same at every run. With the test's small buffer, how far the background
        // had pushed the early flushes when the manual compaction started decided where it
        // put everything (pebblesdb, seen: 2, 0 and 49 tables at levels 0-2 in one run, 3, 8
        // and 10 in others), and with it the image's size.
        let mut model = Map::new();
        let put = |db: &Db, model: &mut Map, i: u32, round: u32| {
            db.put(&key(i), &value(i, round)).unwrap();
            model.insert(key(i), value(i, round));
        };
        let mut round0 = opts(&env, design, compression);
        round0.write_buffer_size = 1 << 20;
        let db = Db::open(DIR, round0).unwrap();
        // Round 0: everything, then pushed down the tree.
        for i in 0..900 {
            put(&db, &mut model, i, 0);
        }
        for i in (0..900).step_by(11) {
            db.delete(&key(i)).unwrap();
            model.remove(&key(i));
        }
        db.flush().unwrap();
        settle(&db);
        db.compact_range(None, None).unwrap();
        settle(&db);
        db.close().unwrap();
        let db = Db::open(DIR, opts(&env, design, compression)).unwrap();
        // Round 1: overwrites and deletes that stay in level 0 (and maybe level 1).
        for i in (0..900).step_by(3) {
            put(&db, &mut model, i, 1);
        }
        for i in (5..900).step_by(17) {
            db.delete(&key(i)).unwrap();
            model.remove(&key(i));
        }
        db.flush().unwrap();
        if design == "lwc" {
            // Push half the key space down: the overwrites are appended to the tables
            // below as new segments.
            db.compact_range(None, Some(&key(450))).unwrap();
        }
        // Round 2: writes that stay in the log.
        let base = model.clone();
        let mut wal_ops = Vec::new();
        for n in 0..120u32 {
            let i = (n * 37) % 950;
            if n % 6 == 5 {
                db.delete(&key(i)).unwrap();
                wal_ops.push((key(i), None));
            } else {
                db.put(&key(i), &value(i, 2)).unwrap();
                wal_ops.push((key(i), Some(value(i, 2))));
            }
        }
        // Round 2 stays in the log; what the rounds before left to the background (level
        // sizes, lwc divisions) is done before the image is taken.
        settle(&db);
        let levels: Vec<usize> = (0..4)
            .map(|l| {
                db.property(&format!("shale.num-files-at-level{l}"))
                    .unwrap()
                    .parse()
                    .unwrap()
            })
            .collect();
        eprintln!("{design} image: tables at levels 0-3 {levels:?}");
        assert!(
            levels.iter().filter(|&&n| n > 0).count() >= 2,
            "tables should sit at several levels: {levels:?}"
        );
        if design == "pebblesdb" {
            // Tables at levels 0, 1 and 2, and several guards at levels 1 and 2 (guard
            // ranges to read across, guard records in the MANIFEST). The shape is the same
            // at every run (round 0 is built without background races): 2, 8 and 10 tables.
            let guards: Vec<usize> = (1..3)
                .map(|l| {
                    db.property(&format!("shale.num-guards-at-level{l}"))
                        .unwrap()
                        .parse()
                        .unwrap()
                })
                .collect();
            assert!(
                levels[..3].iter().all(|&n| n > 0) && guards.iter().all(|&g| g >= 4),
                "tables at levels {levels:?}, guards at levels 1 and 2: {guards:?}"
            );
        }
        if design == "lwc" {
            // Some table grew by an append: flips reach older commit records too.
            let segments: u64 = (0..7)
                .map(|l| {
                    db.property(&format!("shale.lwc.segments-at-level{l}"))
                        .unwrap()
                        .parse::<u64>()
                        .unwrap()
                })
                .sum();
            let files: usize = (0..7)
                .map(|l| {
                    db.property(&format!("shale.num-files-at-level{l}"))
                        .unwrap()
                        .parse::<usize>()
                        .unwrap()
                })
                .sum();
            assert!(
                segments > files as u64,
                "{segments} segments in {files} tables"
            );
        }
        db.close().unwrap();
        let files: Vec<(PathBuf, Vec<u8>)> = mem
            .file_names()
            .into_iter()
            .filter(|p| p.file_name().is_some_and(|n| n != "LOCK"))
            .map(|p| {
                let bytes = env.read_all(&p, ReadCause::Other).unwrap();
                (p, bytes)
            })
            .collect();
        Image {
            design,
            compression,
            files,
            base,
            wal_ops,
        }
    }

    /// A fresh file system holding the image, with `flip` = (file index, byte, bit) applied.
    fn materialize(&self, flip: Option<(usize, usize, u8)>) -> Env {
        let mem = MemFs::new();
        mem.create_dir_all(Path::new(DIR)).unwrap();
        for (n, (path, bytes)) in self.files.iter().enumerate() {
            let mut f = mem.create(path).unwrap();
            match flip {
                Some((i, pos, bit)) if i == n => {
                    let mut b = bytes.clone();
                    b[pos] ^= 1 << bit;
                    f.append(&b).unwrap();
                }
                _ => f.append(bytes).unwrap(),
            }
            f.sync().unwrap();
        }
        mem.sync_dir(Path::new(DIR)).unwrap();
        Env::new(Arc::new(mem))
    }

    fn opts(&self, env: &Env) -> Options {
        opts(env, self.design, self.compression)
    }

    fn kind(&self, i: usize) -> &'static str {
        let name = self.files[i].0.file_name().unwrap().to_str().unwrap();
        if name == "CURRENT" {
            "CURRENT"
        } else if name.starts_with("MANIFEST-") {
            "MANIFEST"
        } else if name.ends_with(".log") {
            "WAL"
        } else if name.ends_with(".sst") {
            "table"
        } else if name.ends_with(".vlog") {
            "vlog"
        } else {
            panic!("unexpected file {name}")
        }
    }

    /// For every key the log's writes touch, its value after each prefix of those writes.
    fn prefix_states(&self) -> BTreeMap<Vec<u8>, Vec<Option<Vec<u8>>>> {
        let touched: BTreeSet<Vec<u8>> = self.wal_ops.iter().map(|(k, _)| k.clone()).collect();
        let mut states = BTreeMap::new();
        for k in touched {
            let mut cur = self.base.get(&k).cloned();
            let mut per = vec![cur.clone()];
            for (ok, ov) in &self.wal_ops {
                if *ok == k {
                    cur = ov.clone();
                }
                per.push(cur.clone());
            }
            states.insert(k, per);
        }
        states
    }
}

/// What one flip led to.
#[derive(Default, Debug)]
struct Tally {
    flips: usize,
    verify_detected: usize,
    open_detected: usize,
    read_detected: usize,
    /// Open and every read succeeded with exactly the model's state.
    intact: usize,
    /// Open succeeded with the state after a strict prefix of the log's writes.
    prefix: usize,
}

/// The ways a corruption may be reported: naming the flipped file, at an offset inside it.
fn names_file(e: &Error, path: &Path, len: usize) -> Result<(), String> {
    match e {
        Error::Corruption { file, offset, .. } if file == path && *offset <= len as u64 => Ok(()),
        other => Err(format!(
            "expected Error::Corruption naming {}, got: {other}",
            path.display()
        )),
    }
}

/// Check one flipped image. Returns which outcome it had, or what went wrong.
fn check_flip(
    image: &Image,
    prefixes: &BTreeMap<Vec<u8>, Vec<Option<Vec<u8>>>>,
    all_keys: &[Vec<u8>],
    flip: (usize, usize, u8),
    tally: &mut Tally,
) -> Result<(), String> {
    let (fi, _, _) = flip;
    let (path, bytes) = &image.files[fi];
    let env = image.materialize(Some(flip));
    match shale::verify(DIR, image.opts(&env)) {
        Ok(_) if image.kind(fi) == "table" => {
            return Err("verify did not notice a flip in a table".into());
        }
        Ok(_) => {}
        Err(e) => {
            names_file(&e, path, bytes.len()).map_err(|m| format!("verify: {m}"))?;
            tally.verify_detected += 1;
        }
    }
    let db = match Db::open(DIR, image.opts(&env)) {
        Ok(db) => db,
        Err(e) => {
            names_file(&e, path, bytes.len()).map_err(|m| format!("open: {m}"))?;
            tally.open_detected += 1;
            return Ok(());
        }
    };
    // Every value read must agree with one prefix length of the log's writes: `candidates`
    // narrows down which.
    let n = image.wal_ops.len();
    let mut candidates: Vec<usize> = (0..=n).collect();
    let mut detected = false;
    let mut observe = |k: &[u8], got: Option<&[u8]>, what: &str| -> Result<(), String> {
        match prefixes.get(k) {
            Some(per) => candidates.retain(|&j| per[j].as_deref() == got),
            None => {
                if image.base.get(k).map(Vec::as_slice) != got {
                    return Err(format!(
                        "{what} of {:?} gave {:?}, expected {:?}",
                        String::from_utf8_lossy(k),
                        got.map(String::from_utf8_lossy),
                        image.base.get(k).map(|v| String::from_utf8_lossy(v))
                    ));
                }
            }
        }
        if candidates.is_empty() {
            return Err(format!(
                "{what} of {:?} gave {:?}, which no prefix of the logged writes explains",
                String::from_utf8_lossy(k),
                got.map(String::from_utf8_lossy)
            ));
        }
        Ok(())
    };
    for k in all_keys {
        match db.get(k) {
            Ok(v) => observe(k, v.as_deref(), "get")?,
            Err(e) => {
                names_file(&e, path, bytes.len()).map_err(|m| format!("get: {m}"))?;
                detected = true;
            }
        }
    }
    let mut scanned = Map::new();
    let mut scan_ok = true;
    let iter = match db.iter(IterOptions::default()) {
        Ok(it) => Some(it),
        Err(e) => {
            names_file(&e, path, bytes.len()).map_err(|m| format!("scan: {m}"))?;
            detected = true;
            scan_ok = false;
            None
        }
    };
    for r in iter.into_iter().flatten() {
        match r {
            Ok((k, v)) => {
                scanned.insert(k, v);
            }
            Err(e) => {
                names_file(&e, path, bytes.len()).map_err(|m| format!("scan: {m}"))?;
                detected = true;
                scan_ok = false;
                break;
            }
        }
    }
    if scan_ok {
        for k in all_keys {
            observe(k, scanned.get(k).map(Vec::as_slice), "scan")?;
        }
        if let Some(k) = scanned.keys().find(|k| all_keys.binary_search(k).is_err()) {
            return Err(format!(
                "scan returned {:?}, a key never written",
                String::from_utf8_lossy(k)
            ));
        }
    }
    db.close().map_err(|e| format!("close: {e}"))?;
    if detected {
        tally.read_detected += 1;
    } else if candidates.contains(&n) {
        tally.intact += 1;
    } else if image.kind(fi) == "vlog" {
        // Only the value log may lose writes to a flip, and only as a torn tail.
        tally.prefix += 1;
    } else {
        return Err(format!(
            "reads match only a strict prefix {candidates:?} of the {n} logged writes"
        ));
    }
    Ok(())
}

/// Panics of any thread (background threads included), recorded by a hook.
static PANICS: AtomicUsize = AtomicUsize::new(0);
static LAST_PANIC: Mutex<String> = Mutex::new(String::new());

fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            if let Ok(mut m) = LAST_PANIC.lock() {
                *m = info.to_string();
            }
            default(info);
        }));
    });
}

/// The byte positions to flip in a file of `len` bytes: every byte of CURRENT and of the
/// MANIFEST, every `wal_stride`th of the log; in tables every byte of the last 400 (footer,
/// properties, index, filter) and every `table_stride`th byte before.
fn positions(kind: &str, len: usize, wal_stride: usize, table_stride: usize) -> Vec<usize> {
    let stride = match kind {
        "CURRENT" | "MANIFEST" => 1,
        "WAL" | "vlog" => wal_stride,
        _ => table_stride,
    };
    let tail = if kind == "table" { 400.min(len) } else { 0 };
    let mut p: Vec<usize> = (0..len - tail).step_by(stride.max(1)).collect();
    p.extend(len - tail..len);
    p
}

/// Build a store, then flip bits in each of its files and check every outcome.
fn flip_everything(
    design: &'static str,
    compression: Compression,
    wal_stride: usize,
    table_stride: usize,
) {
    install_panic_hook();
    let image = Image::build(design, compression);
    let prefixes = image.prefix_states();
    let mut all_keys: Vec<Vec<u8>> = (0..960).map(key).collect();
    all_keys.sort();

    // The untouched image reads back exactly, and opening it starts no compaction: every
    // damaged copy then runs only the reads below.
    {
        let env = image.materialize(None);
        shale::verify(DIR, image.opts(&env)).unwrap();
        let db = Db::open(DIR, image.opts(&env)).unwrap();
        settle(&db);
        assert_eq!(
            db.stats().compactions,
            0,
            "opening the image compacted: {:?}",
            db.property("shale.levels")
        );
        let mut model = image.base.clone();
        for (k, v) in &image.wal_ops {
            match v {
                Some(v) => model.insert(k.clone(), v.clone()),
                None => model.remove(k),
            };
        }
        let got: Map = db
            .iter(IterOptions::default())
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(got, model);
        settle(&db);
        assert_eq!(db.stats().compactions, 0, "reading the image compacted");
        db.close().unwrap();
    }

    // SHALE_FLIP_STRIDE=1 flips every byte of every file.
    let every: Option<usize> = std::env::var("SHALE_FLIP_STRIDE")
        .ok()
        .and_then(|s| s.parse().ok());
    let (wal_stride, table_stride) = every.map_or((wal_stride, table_stride), |s| (s, s));
    let mut tallies: BTreeMap<&str, Tally> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut kinds_seen = BTreeSet::new();
    for fi in 0..image.files.len() {
        let kind = image.kind(fi);
        kinds_seen.insert(kind);
        let len = image.files[fi].1.len();
        for pos in positions(kind, len, wal_stride, table_stride) {
            let bit = ((pos * 5 + fi) % 8) as u8;
            let tally = tallies.entry(kind).or_default();
            tally.flips += 1;
            let before = PANICS.load(Ordering::SeqCst);
            let r = std::panic::catch_unwind(AssertUnwindSafe(|| {
                check_flip(&image, &prefixes, &all_keys, (fi, pos, bit), tally)
            }));
            let what = match r {
                Ok(Ok(())) if PANICS.load(Ordering::SeqCst) == before => continue,
                Ok(Ok(())) => format!("a thread panicked: {}", LAST_PANIC.lock().unwrap()),
                Ok(Err(m)) => m,
                Err(_) => format!("panic: {}", LAST_PANIC.lock().unwrap()),
            };
            failures.push(format!(
                "{} ({kind}, {len} bytes) byte {pos} bit {bit}: {what}",
                image.files[fi].0.display()
            ));
        }
    }
    let total: usize = tallies.values().map(|t| t.flips).sum();
    eprintln!("{design}, compression {compression:?}: {total} flips");
    for (kind, t) in &tallies {
        eprintln!("  {kind:8} {t:?}");
    }
    for f in failures.iter().take(40) {
        eprintln!("{f}");
    }
    assert!(
        failures.is_empty(),
        "{} of {total} flips went wrong; first ones:\n{}",
        failures.len(),
        failures
            .iter()
            .take(15)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    let log = if design == "wisckey" { "vlog" } else { "WAL" };
    assert_eq!(
        kinds_seen,
        ["CURRENT", "MANIFEST", log, "table"].into_iter().collect()
    );
    let t = &tallies["table"];
    assert_eq!(
        t.verify_detected, t.flips,
        "verify must find every flip in a table"
    );
}

#[test]
fn bit_flips_in_every_file_kind_are_detected_or_harmless() {
    flip_everything("leveldb", Compression::None, 2, 23);
}

#[test]
fn bit_flips_in_every_file_kind_of_pebblesdb_are_detected_or_harmless() {
    flip_everything("pebblesdb", Compression::None, 3, 29);
}

#[test]
fn bit_flips_in_a_wisckey_store_are_detected_or_harmless() {
    flip_everything("wisckey", Compression::None, 29, 61);
}

#[test]
fn bit_flips_in_a_flodb_store_are_detected_or_harmless() {
    flip_everything("flodb", Compression::None, 5, 37);
}

/// DTables: flips in segments, in the commit records of older generations (dead bytes only
/// `verify` reads) and in the last commit record.
#[test]
fn bit_flips_in_an_lwc_store_are_detected_or_harmless() {
    flip_everything("lwc", Compression::None, 7, 31);
}

#[test]
fn bit_flips_in_compressed_tables_are_detected_or_harmless() {
    flip_everything("leveldb", Compression::Lz4, 11, 31);
}
