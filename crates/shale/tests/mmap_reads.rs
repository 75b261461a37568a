//! Tables read through memory maps (`Options::mmap_reads`, on in every preset) on the real
//! file system: a store reads the same through maps as through `pread`, across flushes,
//! compactions (whose inputs are mapped, then deleted) and reopens, and never keeps a map of
//! a table it no longer holds; a bit flipped in a table read through its map, or a table cut
//! short, is a corruption error naming the file and an offset in it, as with `pread`
//! (`corrupt_files.rs` flips every file kind on the in-memory file system, which cannot map).

#![expect(clippy::unwrap_used, reason = "test setup failures fail the test")]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use shale::env::Env;
use shale::env::posix::PosixFs;
use shale::{Compression, Db, Error, IterOptions, Options, ReadOptions};

type Map = BTreeMap<Vec<u8>, Vec<u8>>;

struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("shale-mmap-reads-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The `leveldb` preset, small enough that a few thousand keys make several levels of
/// tables, with no block cache (every read goes to a file), on `fs`.
fn opts(fs: &PosixFs, mmap_reads: bool) -> Options {
    let mut o = Options::preset("leveldb")
        .unwrap()
        .with_env(Env::new(Arc::new(fs.clone())));
    assert!(o.mmap_reads, "the preset maps, as LevelDB does");
    o.mmap_reads = mmap_reads;
    o.write_buffer_size = 64 * 1024;
    // A table per memtable: the damage cases pick tables of the shape this gives.
    o.min_memtables_to_merge = 1;
    o.target_file_size = 32 * 1024;
    o.max_bytes_for_level_base = 128 * 1024;
    o.table.block_size = 1024;
    o.block_cache_bytes = 0;
    // Reads of a damaged copy must not start compactions of the damaged table.
    o.leveled.seek_compaction = false;
    o
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn value(i: u32, round: u32) -> Vec<u8> {
    let mut v = format!("v{i}.{round}:").into_bytes();
    v.resize(60 + (i as usize * 7) % 80, b'a' + (i % 26) as u8);
    v
}

fn tables(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".sst"))
        .collect()
}

/// Every key by `get` and by a full scan equals `model`.
fn check_reads(db: &Db, model: &Map, keys: u32) {
    for i in 0..keys {
        assert_eq!(
            db.get(&key(i)).unwrap().as_ref(),
            model.get(&key(i)),
            "key {i}"
        );
    }
    let scanned: Map = db
        .iter(IterOptions::default())
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert!(scanned == *model, "the scan differs from the model");
}

/// Write `rounds` rounds of `keys` keys (later rounds overwrite, every third key deleted in
/// the last), settle, and return the model.
fn fill(db: &Db, keys: u32, rounds: u32) -> Map {
    let mut model = Map::new();
    for round in 0..rounds {
        for i in 0..keys {
            let i = (i * 7919) % keys;
            if round + 1 == rounds && i.is_multiple_of(3) {
                db.delete(&key(i)).unwrap();
                model.remove(&key(i));
            } else {
                db.put(&key(i), &value(i, round)).unwrap();
                model.insert(key(i), value(i, round));
            }
        }
    }
    db.wait_for_compactions().unwrap();
    model
}

#[test]
fn a_store_reads_the_same_through_maps_and_keeps_no_stale_map() {
    const KEYS: u32 = 4000;
    for mmap_reads in [true, false] {
        let tmp = TempDir::new(&format!("store-{mmap_reads}"));
        let fs = PosixFs::with_map_limit(1000);
        let db = Db::open(&tmp.0, opts(&fs, mmap_reads)).unwrap();
        let model = fill(&db, KEYS, 3);
        check_reads(&db, &model, KEYS);
        let live = tables(&tmp.0);
        assert!(live.len() >= 4, "several tables: {live:?}");
        if mmap_reads {
            assert!(fs.mapped_files() > 0, "reads mapped no table");
            assert!(
                fs.mapped_files() <= live.len(),
                "a map of a deleted table is kept"
            );
        } else {
            assert_eq!(fs.mapped_files(), 0);
        }

        // A read-only handle (what another process may hold meanwhile) opens, and maps,
        // every table as its scan reads them.
        let ro_fs = PosixFs::with_map_limit(1000);
        let ro = Db::open_read_only(&tmp.0, opts(&ro_fs, mmap_reads)).unwrap();
        check_reads(&ro, &model, KEYS);
        let ro_mapped = if mmap_reads { live.len() } else { 0 };
        assert_eq!(ro_fs.mapped_files(), ro_mapped);

        // A scan holding the tables it started with across a compaction that replaces
        // them; once it lets them go, the sweep after the next flush deletes their files.
        let mut scan = db.iter(IterOptions::default()).unwrap();
        let first = scan.next().unwrap().unwrap();
        db.compact_range(None, None).unwrap();
        db.wait_for_compactions().unwrap();
        let mut scanned: Map = scan.by_ref().map(|r| r.unwrap()).collect();
        scanned.insert(first.0, first.1);
        assert!(scanned == model, "the scan across the compaction differs");
        drop(scan);
        db.put(&key(1), &model[&key(1)]).unwrap();
        db.flush().unwrap();
        db.wait_for_compactions().unwrap();
        let after = tables(&tmp.0);
        let deleted = live.difference(&after).count();
        assert!(deleted >= live.len() / 2, "{live:?} and {after:?}");
        // The read-only handle still reads the deleted tables through its maps.
        check_reads(&ro, &model, KEYS);
        assert_eq!(ro_fs.mapped_files(), ro_mapped);
        drop(ro);
        assert_eq!(ro_fs.mapped_files(), 0);

        check_reads(&db, &model, KEYS);
        assert!(
            fs.mapped_files() <= after.len(),
            "a map of a deleted table is kept"
        );
        db.close().unwrap();
        assert_eq!(fs.mapped_files(), 0, "close drops every map");

        // Reopened, the same reads; then more writes and a compaction over mapped tables.
        let db = Db::open(&tmp.0, opts(&fs, mmap_reads)).unwrap();
        check_reads(&db, &model, KEYS);
        assert_eq!(fs.mapped_files() > 0, mmap_reads);
        let model = fill(&db, KEYS, 2);
        db.compact_range(None, None).unwrap();
        db.wait_for_compactions().unwrap();
        check_reads(&db, &model, KEYS);
        assert!(fs.mapped_files() <= tables(&tmp.0).len());
        drop(db);
        assert_eq!(fs.mapped_files(), 0, "drop releases every map");
    }
}

/// A corruption error naming `path`, at an offset inside its `len` bytes.
fn names_file(e: &Error, path: &Path, len: u64) -> Result<(), String> {
    match e {
        Error::Corruption { file, offset, .. } if file == path && *offset <= len => Ok(()),
        other => Err(format!(
            "expected Error::Corruption naming {}, got: {other}",
            path.display()
        )),
    }
}

fn copy_store(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// Reads of the damaged copy in `dir` (its table `path` of `len` bytes damaged): `verify`
/// must name the table; the open, every get and the scan either give the model's values or
/// a corruption naming it. Returns whether a get or the scan found it.
fn check_damaged(dir: &Path, path: &Path, len: u64, model: &Map, keys: u32) -> bool {
    let fs = PosixFs::with_map_limit(1000);
    match shale::verify(dir, opts(&fs, true)) {
        Ok(_) => panic!("verify did not notice the damage in {}", path.display()),
        Err(e) => names_file(&e, path, len).unwrap(),
    }
    let db = match Db::open(dir, opts(&fs, true)) {
        Ok(db) => db,
        Err(e) => {
            names_file(&e, path, len).unwrap();
            return false;
        }
    };
    let mut found = false;
    for i in 0..keys {
        match db.get(&key(i)) {
            Ok(v) => assert_eq!(v.as_ref(), model.get(&key(i)), "key {i}"),
            Err(e) => {
                names_file(&e, path, len).unwrap();
                found = true;
            }
        }
    }
    // A scan opens the tables of level 0 as it starts (the others as it reaches them): a
    // damaged footer there fails the scan's creation.
    match db.iter(IterOptions::default()) {
        Ok(iter) => {
            for r in iter {
                match r {
                    Ok((k, v)) => assert_eq!(model.get(&k), Some(&v)),
                    Err(e) => {
                        names_file(&e, path, len).unwrap();
                        found = true;
                        break;
                    }
                }
            }
        }
        Err(e) => {
            names_file(&e, path, len).unwrap();
            found = true;
        }
    }
    assert!(fs.mapped_files() > 0, "the reads went through no map");
    drop(db);
    found
}

#[test]
fn damage_in_a_mapped_table_is_corruption_naming_the_file() {
    const KEYS: u32 = 1500;
    let pristine = TempDir::new("pristine");
    let fs = PosixFs::with_map_limit(1000);
    let db = Db::open(&pristine.0, opts(&fs, true)).unwrap();
    let model = fill(&db, KEYS, 2);
    db.close().unwrap();
    // The largest table: the most data blocks to flip.
    let name = tables(&pristine.0)
        .into_iter()
        .max_by_key(|n| std::fs::metadata(pristine.0.join(n)).unwrap().len())
        .unwrap();
    let bytes = std::fs::read(pristine.0.join(&name)).unwrap();
    let len = bytes.len() as u64;
    let mut found = 0;
    let flips = 24;
    for f in 0..flips {
        // Spread over the file, data blocks to footer, the last byte included.
        let at = (bytes.len() - 1) * f / (flips - 1);
        let copy = TempDir::new(&format!("flip-{f}"));
        copy_store(&pristine.0, &copy.0);
        let mut damaged = bytes.clone();
        damaged[at] ^= 0x10;
        let path = copy.0.join(&name);
        std::fs::write(&path, &damaged).unwrap();
        found += usize::from(check_damaged(&copy.0, &path, len, &model, KEYS));
    }
    eprintln!("reads found {found} of {flips} flips in {name} ({len} bytes)");
    assert!(
        found > flips / 2,
        "reads found only {found} of {flips} flips"
    );

    // A table cut short: reads that reach it name it, at its new end.
    let copy = TempDir::new("cut");
    copy_store(&pristine.0, &copy.0);
    let path = copy.0.join(&name);
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let half = (bytes.len() / 2) as u64;
    assert!(check_damaged(&copy.0, &path, half, &model, KEYS));
    let fs = PosixFs::with_map_limit(1000);
    let db = Db::open(&copy.0, opts(&fs, true)).unwrap();
    let e = (0..KEYS).find_map(|i| db.get(&key(i)).err()).unwrap();
    match &e {
        Error::Corruption { offset, .. } => assert_eq!(*offset, half, "{e}"),
        other => panic!("{other}"),
    }
}

/// A mapped table lends its uncompressed blocks from the map. The block cache holds only
/// blocks whose checksum was checked (the store checks by default): a lent block read
/// without the check (`ReadOptions::verify_checksums = Some(false)`, plyvel's default) is
/// used in place and stays out of it, and a mapped table with nothing in the cache does not
/// even ask it. Any other block such a read brings in (decompressed, or read with `pread`)
/// is checked on the side and cached.
#[test]
fn mapped_blocks_enter_the_cache_only_once_checked() {
    const KEYS: u32 = 3000;
    for mmap_reads in [true, false] {
        for compression in [Compression::None, Compression::Lz4] {
            for verify in [None, Some(false)] {
                let what = format!("mmap {mmap_reads}, {compression:?}, verify {verify:?}");
                let tmp = TempDir::new(&format!("cache-{mmap_reads}-{compression:?}-{verify:?}"));
                let fs = PosixFs::with_map_limit(1000);
                let mut o = opts(&fs, mmap_reads);
                o.block_cache_bytes = 8 << 20;
                o.table.compression = compression;
                let db = Db::open(&tmp.0, o).unwrap();
                let model = fill(&db, KEYS, 2);
                db.compact_range(None, None).unwrap();
                db.wait_for_compactions().unwrap();
                let read = ReadOptions {
                    verify_checksums: verify,
                    fill_cache: true,
                };
                for i in 0..KEYS {
                    let got = db.get_opt(&key(i), None, read).unwrap();
                    assert_eq!(got.as_ref(), model.get(&key(i)), "{what}: key {i}");
                }
                let it = IterOptions {
                    read,
                    ..IterOptions::default()
                };
                let scanned: Map = db.iter(it).unwrap().map(|r| r.unwrap()).collect();
                assert!(scanned == model, "{what}: the scan differs from the model");
                let s = db.stats();
                let lent_unchecked =
                    mmap_reads && compression == Compression::None && verify.is_some();
                let cached = !lent_unchecked;
                assert_eq!(s.block_cache_bytes > 0, cached, "{what}: {s:?}");
                let asked = cached || !mmap_reads;
                assert_eq!(s.block_cache_misses > 0, asked, "{what}: {s:?}");
                drop(db);
                assert_eq!(fs.mapped_files(), 0, "{what}: every map released");
            }
        }
    }
}
