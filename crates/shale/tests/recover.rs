//! Recovery: reopen after a clean close, after losing unsynced data, after a torn log tail,
//! and refusal of a second open and of a log corrupted in the middle.

#![allow(
    clippy::unwrap_used,
    reason = "a test helper's failure is a test failure"
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use shale::env::Env;
use shale::env::mem::MemFs;
use shale::{Db, Error, IterOptions, Options, WriteOptions};

fn opts(env: &Env) -> Options {
    let mut o = Options::default().with_env(env.clone());
    o.write_buffer_size = 32 * 1024;
    o.target_file_size = 16 * 1024;
    o.max_bytes_for_level_base = 64 * 1024;
    o
}

fn all(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    db.iter(IterOptions::default())
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

struct TempDir(PathBuf);
impl TempDir {
    fn new(name: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("shale-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        TempDir(p)
    }
    fn path(&self) -> &Path {
        &self.0
    }
}
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn recover_after_clean_close() {
    let env = Env::memory();
    let db = Db::open("/db", opts(&env)).unwrap();
    let mut model = BTreeMap::new();
    for i in 0..3000u32 {
        let k = format!("key{:05}", (i * 7919) % 2000).into_bytes();
        if i % 5 == 0 {
            db.delete(&k).unwrap();
            model.remove(&k);
        } else {
            let v = format!("value-{i}").into_bytes();
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
    }
    assert!(db.stats().flushes > 0, "the test should cover flushed data");
    db.close().unwrap();
    let db = Db::open("/db", opts(&env)).unwrap();
    assert_eq!(all(&db), model);
    // New writes after recovery get fresh sequence numbers and win over old ones.
    db.put(b"key00001", b"after").unwrap();
    assert_eq!(db.get(b"key00001").unwrap().as_deref(), Some(&b"after"[..]));
    db.close().unwrap();
    let db = Db::open("/db", opts(&env)).unwrap();
    assert_eq!(db.get(b"key00001").unwrap().as_deref(), Some(&b"after"[..]));
}

/// Write a history of puts (some synced), crash at many points, and check that each crash
/// image recovers to a prefix of the history that includes every synced write.
#[test]
fn recover_after_dropping_unsynced_data() {
    let mem = MemFs::new();
    let env = Env::new(Arc::new(mem.clone()));
    let db = Db::open("/db", opts(&env)).unwrap();
    let mut history: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut images: Vec<(usize, usize, MemFs)> = Vec::new(); // (ops done, synced ops, image)
    let mut synced = 0;
    for i in 0..2000usize {
        let k = format!("k{:04}", (i * 31) % 500).into_bytes();
        let v = format!("v{i}").into_bytes();
        let sync = i % 97 == 0;
        db.write_opt(
            {
                let mut b = shale::WriteBatch::new();
                b.put(&k, &v);
                b
            },
            WriteOptions { sync },
        )
        .unwrap();
        history.push((k, v));
        if sync {
            synced = history.len();
        }
        if i % 83 == 0 {
            images.push((history.len(), synced, mem.snapshot_durable()));
        }
    }
    drop(db);
    assert!(images.len() > 10);
    for (done, synced, image) in images {
        let env = Env::new(Arc::new(image));
        let db = Db::open("/db", opts(&env)).unwrap();
        let got = all(&db);
        // Find the prefix length this state corresponds to.
        let mut model = BTreeMap::new();
        let mut matched = None;
        if got.is_empty() {
            matched = Some(0);
        }
        for (n, (k, v)) in history.iter().take(done).enumerate() {
            model.insert(k.clone(), v.clone());
            if model == got {
                matched = Some(n + 1);
            }
        }
        let n = matched.unwrap_or_else(|| panic!("crash image after {done} ops is not a prefix"));
        assert!(
            n >= synced,
            "crash image after {done} ops lost synced writes: recovered {n} < {synced} synced"
        );
    }
}

/// The largest log file of a store (the one holding the writes).
fn largest_log(dir: &Path) -> PathBuf {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap()
}

/// Write 100 keys that all stay in the log, and close.
fn fill_log(dir: &Path, o: Options) {
    let db = Db::open(dir, o).unwrap();
    for i in 0..100u32 {
        db.put(format!("k{i:03}").as_bytes(), &[b'v'; 100]).unwrap();
    }
    db.close().unwrap();
}

/// The largest log file of an in-memory store under `dir`, and its bytes.
fn largest_mem_log(mem: &MemFs, dir: &str) -> (PathBuf, Vec<u8>) {
    let env = Env::new(Arc::new(mem.clone()));
    mem.file_names()
        .into_iter()
        .filter(|p| p.starts_with(dir) && p.extension().is_some_and(|e| e == "log"))
        .map(|p| {
            let mut b = env.read_all(&p, shale::env::ReadCause::Other).unwrap();
            // A log is a log file (`Env::create_log`): in an image taken while it was
            // written, the space reserved after its records reads as zeros. The tests'
            // records end in non-zero bytes, so the zeros are the reservation.
            let end = b.iter().rposition(|&x| x != 0).map_or(0, |i| i + 1);
            b.truncate(end);
            (p, b)
        })
        .max_by_key(|(_, b)| b.len())
        .unwrap()
}

/// Replace a file of an in-memory file system.
fn rewrite(mem: &MemFs, path: &Path, bytes: &[u8]) {
    use shale::env::FileSystem;
    let mut f = mem.create(path).unwrap();
    f.append(bytes).unwrap();
    f.sync().unwrap();
}

#[test]
fn recover_torn_log_tail_and_refuse_middle_corruption() {
    let mem = MemFs::new();
    let env = Env::new(Arc::new(mem.clone()));
    let o = |env: &Env| {
        let mut o = opts(env);
        o.write_buffer_size = 1 << 20; // everything stays in the log
        o
    };
    // A crash while the last record was being written (no clean close, so how far the log
    // is complete is not recorded): every write but the last comes back.
    let db = Db::open("/torn", o(&env)).unwrap();
    for i in 0..100u32 {
        db.put(format!("k{i:03}").as_bytes(), &[b'v'; 100]).unwrap();
    }
    let image = mem.fork();
    db.close().unwrap();
    let (log, bytes) = largest_mem_log(&image, "/torn");
    rewrite(&image, &log, &bytes[..bytes.len() - 20]);
    {
        let ienv = Env::new(Arc::new(image.clone()));
        let db = Db::open("/torn", o(&ienv)).unwrap();
        let got = all(&db);
        assert_eq!(got.len(), 99);
        assert!(!got.contains_key(&b"k099"[..]));
        assert_eq!(db.stats().placement.wal_bytes_dropped, 126 - 20); // one record: 7 + 12 + 2 + 4 + 1 + 100 bytes
        db.close().unwrap();
    }

    // After a clean close the log's length is in the MANIFEST: the same cut is damage
    // (issue 17, case 3), unless the user asks for point-in-time recovery.
    let tmp = TempDir::new("torn");
    fill_log(tmp.path(), o(&Env::posix()));
    let log = largest_log(tmp.path());
    let bytes = std::fs::read(&log).unwrap();
    std::fs::write(&log, &bytes[..bytes.len() - 20]).unwrap();
    match Db::open(tmp.path(), o(&Env::posix())) {
        Err(Error::Corruption { file, offset, .. }) => {
            assert_eq!(file, log);
            assert_eq!(offset, bytes.len() as u64 - 126);
        }
        other => panic!("expected corruption naming the log, got {other:?}"),
    }
    {
        let mut pit = o(&Env::posix());
        pit.wal_recovery_mode = shale::WalRecoveryMode::PointInTimeRecovery;
        let db = Db::open(tmp.path(), pit).unwrap();
        let got = all(&db);
        assert_eq!(got.len(), 99);
        assert!(!got.contains_key(&b"k099"[..]));
        db.close().unwrap();
    }

    // A second store: flip a byte in the middle of its log. Open must report it.
    let tmp2 = TempDir::new("middle");
    fill_log(tmp2.path(), o(&Env::posix()));
    let log = largest_log(tmp2.path());
    let mut bytes = std::fs::read(&log).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x40;
    std::fs::write(&log, &bytes).unwrap();
    match Db::open(tmp2.path(), o(&Env::posix())) {
        Err(Error::Corruption { file, .. }) => assert_eq!(file, log),
        other => panic!("expected corruption naming the log, got {other:?}"),
    }
}

#[test]
fn second_open_is_locked() {
    let tmp = TempDir::new("lock");
    let db = Db::open(tmp.path(), Options::default()).unwrap();
    match Db::open(tmp.path(), Options::default()) {
        Err(Error::Locked { .. }) => {}
        other => panic!("expected Locked, got {other:?}"),
    }
    db.close().unwrap();
    let db = Db::open(tmp.path(), Options::default()).unwrap();
    drop(db);
    // Also with the in-memory file system.
    let env = Env::memory();
    let a = Db::open("/x", opts(&env)).unwrap();
    assert!(matches!(
        Db::open("/x", opts(&env)),
        Err(Error::Locked { .. })
    ));
    drop(a);
    assert!(Db::open("/x", opts(&env)).is_ok());
}

#[test]
fn bad_input_gets_clear_errors() {
    let env = Env::memory();
    let db = Db::open("/db", opts(&env)).unwrap();
    let big = vec![0u8; shale::options::MAX_KEY_SIZE + 1];
    match db.put(&big, b"v") {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("key"), "{m}"),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    // A value over the limit is refused by put_opt and delete_opt's key check alike.
    let huge = vec![1u8; shale::options::MAX_VALUE_SIZE + 1];
    match db.put_opt(b"k", &huge, shale::WriteOptions { sync: true }) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("value"), "{m}"),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    drop(huge);
    assert!(matches!(
        db.delete_opt(&big, shale::WriteOptions::default()),
        Err(Error::InvalidArgument(_))
    ));
    // Nothing was written.
    assert_eq!(db.stats().user_ops_written, 0);
    // A batch too large for one log record is refused whole and leaves the store writable.
    let mut b = shale::WriteBatch::new();
    let big_value = vec![7u8; 180 << 20];
    for k in [b"a", b"b", b"c"] {
        b.put(k, &big_value);
    }
    drop(big_value);
    assert!(matches!(db.write(b), Err(Error::InvalidArgument(_))));
    db.put(b"small", b"ok").unwrap();
    assert_eq!(db.get(b"a").unwrap(), None);
    let mut o = opts(&env);
    o.level0_slowdown_trigger = 1;
    assert!(matches!(
        Db::open("/other", o),
        Err(Error::InvalidArgument(_))
    ));
    let mut o = opts(&env);
    o.create_if_missing = false;
    assert!(matches!(
        Db::open("/nothing", o),
        Err(Error::InvalidArgument(_))
    ));
}

/// Inputs of a compaction are deleted as soon as the compaction commits (when no reader
/// holds them), not at some later sweep.
#[test]
fn compaction_inputs_are_deleted_promptly() {
    let env = Env::memory();
    let db = Db::open("/db", opts(&env)).unwrap();
    for i in 0..4000u32 {
        db.put(
            format!("key{:05}", (i * 7919) % 3000).as_bytes(),
            &[b'x'; 60],
        )
        .unwrap();
    }
    db.compact_range(None, None).unwrap();
    let live: usize = db.stats().levels.iter().map(|l| l.files).sum();
    let on_disk = env
        .fs()
        .list_dir(Path::new("/db"))
        .unwrap()
        .iter()
        .filter(|n| n.ends_with(".sst"))
        .count();
    assert_eq!(on_disk, live, "tables on disk vs tables in the version");
    // A reader holding the old version keeps its files until it is dropped.
    let it = db.iter(IterOptions::default()).unwrap();
    db.put(b"key00001", b"rewritten").unwrap();
    db.compact_range(None, None).unwrap();
    let held: usize = env
        .fs()
        .list_dir(Path::new("/db"))
        .unwrap()
        .iter()
        .filter(|n| n.ends_with(".sst"))
        .count();
    let count = it.count();
    assert_eq!(count, 3000, "the old iterator still reads every key");
    assert!(held > db.stats().levels.iter().map(|l| l.files).sum::<usize>());
}

/// A torn last record in a log that kept the zeros it reserved ahead of its writer
/// (`Env::create_log`): only the torn record's bytes count as dropped, not the zeros.
#[test]
fn a_torn_record_before_reserved_zeros_counts_only_its_own_bytes() {
    let mem = MemFs::new();
    let env = Env::new(Arc::new(mem.clone()));
    let mut o = opts(&env);
    o.write_buffer_size = 1 << 20;
    let db = Db::open("/z", o.clone()).unwrap();
    for i in 0..100u32 {
        db.put(format!("k{i:03}").as_bytes(), &[b'v'; 100]).unwrap();
    }
    let image = mem.fork();
    db.close().unwrap();
    let ienv = Env::new(Arc::new(image.clone()));
    let log = image
        .file_names()
        .into_iter()
        .filter(|p| p.starts_with("/z") && p.extension().is_some_and(|e| e == "log"))
        .max_by_key(|p| ienv.fs().file_size(p).unwrap())
        .unwrap();
    let mut bytes = ienv.read_all(&log, shale::env::ReadCause::Other).unwrap();
    let end = bytes.iter().rposition(|&b| b != 0).unwrap() + 1;
    assert!(end < bytes.len(), "the image keeps the log's reservation");
    // The last record loses its last 20 bytes; the reservation after it stays.
    bytes[end - 20..end].fill(0);
    rewrite(&image, &log, &bytes);
    let db = Db::open("/z", o.with_env(ienv)).unwrap();
    let got = all(&db);
    assert_eq!(got.len(), 99);
    // One record is 7 + 12 + 2 + 4 + 1 + 100 bytes; 20 of them are gone.
    assert_eq!(db.stats().placement.wal_bytes_dropped, 126 - 20);
}

/// A crash while writing a record whose value happens to contain a well-formed log record:
/// the torn tail must be dropped, not taken for damage followed by a valid record.
#[test]
fn torn_record_holding_a_framed_record_is_a_torn_tail() {
    let mem = MemFs::new();
    let env = Env::new(Arc::new(mem.clone()));
    let mut o = opts(&env);
    o.write_buffer_size = 1 << 20;
    let mut framed = shale::wal::LogWriter::with_sink(Vec::new());
    framed.add_record(b"a record inside a value").unwrap();
    let framed = framed.into_sink();
    let mut value = vec![b'x'; 100];
    value.extend_from_slice(&framed);
    value.extend_from_slice(&[b'y'; 3000]);
    // A crash image taken before a clean close: the log's length is not recorded.
    let image = {
        let db = Db::open("/db", o.clone()).unwrap();
        db.put(b"a", b"first").unwrap();
        db.put(b"b", &value).unwrap();
        let image = mem.fork();
        db.close().unwrap();
        image
    };
    let (log, bytes) = largest_mem_log(&image, "/db");
    rewrite(&image, &log, &bytes[..bytes.len() - 1000]);
    let db = Db::open("/db", o.with_env(Env::new(Arc::new(image)))).unwrap();
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"first"[..]));
    assert_eq!(db.get(b"b").unwrap(), None);
}

/// Files with absurd numbers in the directory are not the engine's: open ignores them
/// rather than overflowing its file-number arithmetic.
#[test]
fn absurd_file_numbers_are_ignored() {
    let tmp = TempDir::new("absurd");
    let env = Env::posix();
    {
        let db = Db::open(tmp.path(), opts(&env)).unwrap();
        db.put(b"k", b"v").unwrap();
        db.close().unwrap();
    }
    for name in [
        "18446744073709551615.sst",
        "18446744073709551614.log",
        "MANIFEST-18446744073709551615",
    ] {
        std::fs::write(tmp.path().join(name), b"").unwrap();
    }
    let db = Db::open(tmp.path(), opts(&env)).unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    db.put(b"k2", b"v2").unwrap();
    db.close().unwrap();
}

/// `sync_wal` makes the writes made before it durable: a crash image taken after it holds
/// them all, for every preset (the WAL and the value log).
#[test]
fn sync_wal_makes_unsynced_writes_durable() {
    for design in Options::available_presets() {
        let mem = MemFs::new();
        let env = Env::new(Arc::new(mem.clone()));
        let mut o = Options::preset(design).unwrap().with_env(env.clone());
        o.write_buffer_size = 1 << 20;
        let db = Db::open("/db", o.clone()).unwrap();
        for i in 0..200u32 {
            db.put(format!("k{i:04}").as_bytes(), &[b'v'; 700]).unwrap();
        }
        // Before the sync a crash may lose them (nothing forced them out).
        db.sync_wal().unwrap();
        let image = mem.snapshot_durable();
        drop(db);
        let o = o.with_env(Env::new(Arc::new(image)));
        let db = Db::open("/db", o).unwrap();
        for i in 0..200u32 {
            assert_eq!(
                db.get(format!("k{i:04}").as_bytes()).unwrap().as_deref(),
                Some(&[b'v'; 700][..]),
                "{design}: k{i:04}"
            );
        }
        db.close().unwrap();
    }
}
