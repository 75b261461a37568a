//! Damage that used to lose data silently (issue 17): each case either returns the
//! committed data or fails with `Error::Corruption` naming the file, and `verify` agrees
//! with open. Every case runs for every design preset.

#![expect(clippy::unwrap_used, reason = "test setup failures fail the test")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use shale::env::mem::MemFs;
use shale::env::{Env, FileSystem, ReadCause};
use shale::{Db, Error, IterOptions, Options};

const DIR: &str = "/db";

fn opts(env: &Env, design: &str) -> Options {
    let mut o = Options::preset(design).unwrap().with_env(env.clone());
    o.write_buffer_size = 16 * 1024;
    o.target_file_size = 8 * 1024;
    // Each memtable flushed to its own table: the cases below need several tables.
    o.min_memtables_to_merge = 1;
    if design == "wisckey" {
        o.min_separated_value_size = 24;
        o.vlog_segment_size = 16 * 1024;
        o.vlog_gc = false;
    }
    o
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn value(i: u32, round: u32) -> Vec<u8> {
    format!("value {i} of round {round}, padded to separate it").into_bytes()
}

/// A closed store: 600 keys in tables, 100 overwrites in the log. Returns its model.
fn build(env: &Env, design: &str) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let db = Db::open(DIR, opts(env, design)).unwrap();
    let mut model = BTreeMap::new();
    for i in 0..600 {
        db.put(&key(i), &value(i, 0)).unwrap();
        model.insert(key(i), value(i, 0));
    }
    db.flush().unwrap();
    for i in (0..600).step_by(6) {
        db.put(&key(i), &value(i, 1)).unwrap();
        model.insert(key(i), value(i, 1));
    }
    db.close().unwrap();
    model
}

/// A fresh in-memory file system holding a store of `design` built by [`build`].
fn built(design: &str) -> (MemFs, Env, BTreeMap<Vec<u8>, Vec<u8>>) {
    let mem = MemFs::new();
    let env = Env::new(Arc::new(mem.clone()));
    let model = build(&env, design);
    (mem, env, model)
}

/// Every file of the store and its bytes (LOCK excluded).
fn files(mem: &MemFs) -> BTreeMap<PathBuf, Vec<u8>> {
    let env = Env::new(Arc::new(mem.clone()));
    mem.file_names()
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n != "LOCK"))
        .map(|p| {
            let b = env.read_all(&p, ReadCause::Other).unwrap();
            (p, b)
        })
        .collect()
}

/// The store's files are still exactly `before` (names and bytes).
fn same_files(mem: &MemFs, before: &BTreeMap<PathBuf, Vec<u8>>, what: &str) {
    let now = files(mem);
    let names = |m: &BTreeMap<PathBuf, Vec<u8>>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(&now), names(before), "{what}: files added or removed");
    for (p, b) in before {
        assert!(now[p] == *b, "{what}: {} changed", p.display());
    }
}

fn names_with(mem: &MemFs, f: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    mem.file_names()
        .into_iter()
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(&f))
        .collect()
}

fn corruption_at(e: &Error) -> PathBuf {
    match e {
        Error::Corruption { file, .. } => file.clone(),
        other => panic!("expected Error::Corruption, got: {other}"),
    }
}

/// Everything the store holds: a scan, or for a store that answers point reads only
/// (`Db::supports_scans`), a get of every key these tests write (`key(0..1500)`).
fn scan(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    if !db.supports_scans() {
        return (0..1500)
            .filter_map(|i| db.get(&key(i)).unwrap().map(|v| (key(i), v)))
            .collect();
    }
    db.iter(IterOptions::default())
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Case 1: CURRENT missing. Open (creating or not) and verify report a damaged store,
/// naming the directory and how to repair it; no file changes, no store is created.
#[test]
fn missing_current_is_a_damaged_store_not_a_new_one() {
    for design in Options::available_presets() {
        let (mem, env, model) = built(design);
        mem.remove_file(&Path::new(DIR).join("CURRENT")).unwrap();
        let before = files(&mem);
        for create in [true, false] {
            let mut o = opts(&env, design);
            o.create_if_missing = create;
            let e = Db::open(DIR, o).unwrap_err();
            assert_eq!(corruption_at(&e), Path::new("/db/CURRENT"), "{design}");
            let s = e.to_string();
            assert!(s.contains("/db") && s.contains("repair"), "{design}: {s}");
            same_files(&mem, &before, design);
        }
        let e = shale::verify(DIR, opts(&env, design)).unwrap_err();
        assert_eq!(corruption_at(&e), Path::new("/db/CURRENT"), "{design}");
        same_files(&mem, &before, design);

        // Restoring CURRENT (naming the newest MANIFEST) repairs the store.
        let manifest = names_with(&mem, |n| n.starts_with("MANIFEST-"))
            .into_iter()
            .max()
            .unwrap();
        let number: u64 = manifest.to_str().unwrap()["/db/MANIFEST-".len()..]
            .parse()
            .unwrap();
        shale::manifest::write_current(&env, Path::new(DIR), number).unwrap();
        shale::verify(DIR, opts(&env, design)).unwrap();
        let db = Db::open(DIR, opts(&env, design)).unwrap();
        assert_eq!(scan(&db), model, "{design}");
        db.close().unwrap();
    }
}

/// Case 1, each kind of store file alone is enough to refuse to create a store.
#[test]
fn any_store_file_without_current_is_refused() {
    for design in Options::available_presets() {
        for name in ["000007.sst", "000004.log", "000009.vlog"] {
            let mem = MemFs::new();
            let env = Env::new(Arc::new(mem.clone()));
            mem.create_dir_all(Path::new(DIR)).unwrap();
            let mut f = mem.create(&Path::new(DIR).join(name)).unwrap();
            f.append(b"not empty").unwrap();
            f.sync().unwrap();
            let e = Db::open(DIR, opts(&env, design)).unwrap_err();
            assert_eq!(
                corruption_at(&e),
                Path::new("/db/CURRENT"),
                "{design} {name}"
            );
            assert!(e.to_string().contains(name), "{e}");
            assert!(!mem.file_names().iter().any(|p| p.ends_with("CURRENT")));
        }
    }
}

/// Case 10 (part): creating a store in a directory of user files deletes none of them,
/// `*.tmp` files included; only the store's own `CURRENT.tmp` is removed.
#[test]
fn creating_a_store_keeps_files_it_does_not_own() {
    for design in Options::available_presets() {
        let mem = MemFs::new();
        let env = Env::new(Arc::new(mem.clone()));
        mem.create_dir_all(Path::new(DIR)).unwrap();
        let user = ["notes.txt", "draft.tmp", "000012.sst.bak", "sst", "log.txt"];
        for name in user {
            let mut f = mem.create(&Path::new(DIR).join(name)).unwrap();
            f.append(name.as_bytes()).unwrap();
            f.sync().unwrap();
        }
        let db = Db::open(DIR, opts(&env, design)).unwrap();
        for i in 0..300 {
            db.put(&key(i), &value(i, 0)).unwrap();
        }
        db.flush().unwrap();
        db.close().unwrap();
        let db = Db::open(DIR, opts(&env, design)).unwrap();
        assert_eq!(scan(&db).len(), 300);
        db.close().unwrap();
        for name in user {
            let got = env
                .read_all(&Path::new(DIR).join(name), ReadCause::Other)
                .unwrap();
            assert_eq!(got, name.as_bytes(), "{design}: {name}");
        }
    }
}

/// A crash while a store was being created (its first MANIFEST written, CURRENT not yet)
/// is not damage: the store is created again.
#[test]
fn an_interrupted_creation_is_created_again() {
    for design in Options::available_presets() {
        let mem = MemFs::new();
        let env = Env::new(Arc::new(mem.clone()));
        // The snapshot edit a new store's MANIFEST starts with.
        {
            let db = Db::open("/probe", opts(&env, design)).unwrap();
            db.close().unwrap();
        }
        let edits = shale::manifest::read_manifest(&env, Path::new("/probe"), 1).unwrap();
        mem.create_dir_all(Path::new(DIR)).unwrap();
        let mut w = shale::manifest::ManifestWriter::create(&env, Path::new(DIR), 1).unwrap();
        w.append(&edits[0]).unwrap();
        drop(w);
        let db = Db::open(DIR, opts(&env, design)).unwrap();
        db.put(b"k", b"v").unwrap();
        db.close().unwrap();
        let db = Db::open(DIR, opts(&env, design)).unwrap();
        assert_eq!(
            db.get(b"k").unwrap().as_deref(),
            Some(&b"v"[..]),
            "{design}"
        );
        db.close().unwrap();
    }
}

/// Open and verify both refuse the store with `Error::Corruption` naming `file`, and leave
/// every file as it was.
fn open_and_verify_refuse(mem: &MemFs, design: &str, file: &Path, what: &str) {
    let env = Env::new(Arc::new(mem.clone()));
    let before = files(mem);
    let e = shale::verify(DIR, opts(&env, design)).unwrap_err();
    assert_eq!(corruption_at(&e), file, "{design} {what}: verify: {e}");
    let e = Db::open_read_only(DIR, opts(&env, design)).unwrap_err();
    assert_eq!(
        corruption_at(&e),
        file,
        "{design} {what}: read-only open: {e}"
    );
    let e = Db::open(DIR, opts(&env, design)).unwrap_err();
    assert_eq!(corruption_at(&e), file, "{design} {what}: open: {e}");
    same_files(mem, &before, &format!("{design} {what}"));
}

/// Case 9: a table the MANIFEST lists is missing: open and verify refuse the store, naming
/// the missing files ("N missing files").
#[test]
fn a_missing_table_is_corruption_at_open_and_in_verify() {
    for design in Options::available_presets() {
        let (mem, _, _) = built(design);
        let tables = names_with(&mem, |n| n.ends_with(".sst"));
        assert!(tables.len() >= 2, "{design}: {tables:?}");
        for gone in [&tables[..1], &tables[..]] {
            let m = mem.fork();
            for t in gone {
                m.remove_file(t).unwrap();
            }
            open_and_verify_refuse(&m, design, &gone[0], "missing table");
            let e = Db::open(DIR, opts(&Env::new(Arc::new(m.clone())), design)).unwrap_err();
            assert!(
                e.to_string()
                    .contains(&format!("{} missing files", gone.len())),
                "{e}"
            );
        }
    }
}

/// Case 9: the MANIFEST that CURRENT names is missing: `Error::Corruption`, not I/O.
#[test]
fn a_missing_manifest_is_corruption() {
    for design in Options::available_presets() {
        let (mem, env, _) = built(design);
        let number = shale::manifest::read_current(&env, Path::new(DIR)).unwrap();
        let path = Path::new(DIR).join(shale::manifest::manifest_file_name(number));
        mem.remove_file(&path).unwrap();
        open_and_verify_refuse(&mem, design, &path, "missing MANIFEST");
    }
}

/// Case 8/9: a sealed value-log segment that is missing: open refused it already; verify
/// now agrees.
#[test]
fn a_missing_sealed_segment_is_corruption_in_verify_too() {
    let (mem, _, _) = built("wisckey");
    let segments = names_with(&mem, |n| n.ends_with(".vlog"));
    assert!(segments.len() >= 2, "{segments:?}");
    for s in &segments {
        let m = mem.fork();
        m.remove_file(s).unwrap();
        open_and_verify_refuse(&m, "wisckey", s, "missing segment");
    }
}

/// The presets whose durability log is the WAL (the value log keeps its own rules,
/// `docs/format/vlog.md`).
fn wal_presets() -> Vec<&'static str> {
    Options::available_presets()
        .into_iter()
        .filter(|d| Options::preset(d).unwrap().values == shale::ValuesKind::Inline)
        .collect()
}

/// Put keys `keys` with values of `round`, in the store and the model.
fn put_all(
    db: &Db,
    model: &mut BTreeMap<Vec<u8>, Vec<u8>>,
    keys: std::ops::Range<u32>,
    round: u32,
) {
    for i in keys {
        db.put(&key(i), &value(i, round)).unwrap();
        model.insert(key(i), value(i, round));
    }
}

/// The largest WAL of the store.
fn largest_log(mem: &MemFs) -> PathBuf {
    let env = Env::new(Arc::new(mem.clone()));
    names_with(mem, |n| n.ends_with(".log"))
        .into_iter()
        .max_by_key(|p| env.read_all(p, ReadCause::Other).unwrap().len())
        .unwrap()
}

/// A cleanly closed store of `design` whose memtables hold 1 MiB, after `fill` wrote to
/// it. Returns the model and the largest log.
fn closed_store(
    mem: &MemFs,
    design: &str,
    fill: impl FnOnce(&Db, &mut BTreeMap<Vec<u8>, Vec<u8>>),
) -> (BTreeMap<Vec<u8>, Vec<u8>>, PathBuf) {
    let mut o = opts(&Env::new(Arc::new(mem.clone())), design);
    o.write_buffer_size = 1 << 20;
    let db = Db::open(DIR, o).unwrap();
    let mut model = BTreeMap::new();
    fill(&db, &mut model);
    db.close().unwrap();
    (model, largest_log(mem))
}

/// A cleanly closed store whose newest WAL holds 200 writes (about 12 KiB). Returns the
/// model and the log's path.
fn build_with_log(mem: &MemFs, design: &str) -> (BTreeMap<Vec<u8>, Vec<u8>>, PathBuf) {
    closed_store(mem, design, |db, model| {
        put_all(db, model, 0..300, 0);
        db.flush().unwrap();
        put_all(db, model, 0..200, 1);
    })
}

fn rewrite(mem: &MemFs, path: &Path, bytes: &[u8]) {
    let mut f = mem.create(path).unwrap();
    f.append(bytes).unwrap();
    f.sync().unwrap();
}

/// Case 2: a zeroed 4 KiB page inside the newest WAL of a cleanly closed store is damage
/// (not a lost page of an unsynced tail): open and verify report it, and nothing is
/// deleted; point-in-time recovery opens the writes before it.
#[test]
fn a_zeroed_page_in_a_closed_log_is_corruption() {
    for design in wal_presets() {
        let mem = MemFs::new();
        let env = Env::new(Arc::new(mem.clone()));
        let (model, log) = build_with_log(&mem, design);
        let mut bytes = env.read_all(&log, ReadCause::Other).unwrap();
        assert!(bytes.len() > 3 * 4096, "{design}: {} bytes", bytes.len());
        bytes[4096..8192].fill(0);
        rewrite(&mem, &log, &bytes);
        open_and_verify_refuse(&mem, design, &log, "zeroed page");
        let mut o = opts(&env, design);
        o.wal_recovery_mode = shale::WalRecoveryMode::PointInTimeRecovery;
        let db = Db::open(DIR, o).unwrap();
        let got = scan(&db);
        assert!(db.stats().placement.wal_bytes_dropped > 0);
        // A prefix: the overwrites of the first keys survive, of the last keys not.
        assert_eq!(got.get(&key(0)), model.get(&key(0)), "{design}");
        assert_eq!(got.get(&key(199)), Some(&value(199, 0)), "{design}");
        db.close().unwrap();
    }
}

/// Case 3: damage to the last record of a cleanly closed store's WAL (a flipped bit, a
/// cut, or the log deleted) is not a torn tail.
#[test]
fn damage_to_the_last_record_of_a_closed_log_is_corruption() {
    for design in wal_presets() {
        let mem = MemFs::new();
        let env = Env::new(Arc::new(mem.clone()));
        let (_, log) = build_with_log(&mem, design);
        let bytes = env.read_all(&log, ReadCause::Other).unwrap();
        let n = bytes.len();
        for (what, damaged) in [
            ("flipped bit", {
                let mut b = bytes.clone();
                b[n - 5] ^= 0x10;
                Some(b)
            }),
            ("cut by one byte", Some(bytes[..n - 1].to_vec())),
            ("cut by a record", Some(bytes[..n - 60].to_vec())),
            ("deleted", None),
        ] {
            let m = mem.fork();
            match damaged {
                Some(b) => rewrite(&m, &log, &b),
                None => m.remove_file(&log).unwrap(),
            }
            open_and_verify_refuse(&m, design, &log, what);
        }
        // The undamaged store opens, and verify counts the log.
        let r = shale::verify(DIR, opts(&env, design)).unwrap();
        assert!(r.placement.logs >= 1 && r.placement.log_bytes_dropped == 0);
    }
}

/// Case 5: the older of two logs deleted (a crash between a log switch and the flush that
/// retires it leaves two): the newer log's header names it, so open and verify report it.
/// Untouched, the same crash image opens with every write.
#[test]
fn a_deleted_older_log_is_found_missing() {
    use shale::env::fault::{FailMode, FaultFs};
    for design in wal_presets() {
        let fault = FaultFs::new(MemFs::new());
        let control = fault.control();
        let env = Env::new(Arc::new(fault.clone()));
        let mut o = opts(&env, design);
        o.write_buffer_size = 1 << 20;
        let db = Db::open(DIR, o).unwrap();
        let mut model = BTreeMap::new();
        for i in 0..200 {
            db.put(&key(i), &value(i, 0)).unwrap();
            model.insert(key(i), value(i, 0));
        }
        // The flush switches logs, then cannot write its table: both logs stay.
        control.fail_when(
            Arc::new(|op| op.path.extension().is_some_and(|e| e == "sst")),
            FailMode::FromThenOn,
        );
        assert!(db.flush().is_err());
        let image = fault.mem().fork();
        drop(db);
        let mut logs = names_with(&image, |n| n.ends_with(".log"));
        logs.sort();
        assert_eq!(logs.len(), 2, "{design}: {logs:?}");
        {
            let m = image.fork();
            let db = Db::open(DIR, opts(&Env::new(Arc::new(m)), design)).unwrap();
            assert_eq!(scan(&db), model, "{design}");
            db.close().unwrap();
        }
        image.remove_file(&logs[0]).unwrap();
        open_and_verify_refuse(&image, design, &logs[0], "older log deleted");
    }
}

/// Case 5: a WAL copied in from another store is refused, not replayed.
#[test]
fn a_log_from_another_store_is_refused() {
    for design in wal_presets() {
        let mem = MemFs::new();
        let (_, log) = build_with_log(&mem, design);
        // Another store with the same history, so its log numbers are the same.
        let other = MemFs::new();
        let oenv = Env::new(Arc::new(other.clone()));
        let (_, other_log) = build_with_log(&other, design);
        let bytes = oenv.read_all(&other_log, ReadCause::Other).unwrap();
        for target in [log.clone(), Path::new(DIR).join("999999.log")] {
            let m = mem.fork();
            rewrite(&m, &target, &bytes);
            let menv = Env::new(Arc::new(m.clone()));
            for e in [
                Db::open(DIR, opts(&menv, design)).unwrap_err(),
                shale::verify(DIR, opts(&menv, design)).unwrap_err(),
            ] {
                assert_eq!(corruption_at(&e), target, "{design}: {e}");
                assert!(e.to_string().contains("another store"), "{e}");
            }
        }
    }
}

/// Each WAL recovery mode on a log damaged in the middle: the default and absolute
/// consistency refuse it, point in time opens the prefix before the damage, skip-any
/// opens everything but the damaged block's records.
#[test]
fn wal_recovery_modes_on_damage_in_the_middle() {
    use shale::WalRecoveryMode as M;
    for design in wal_presets() {
        let mem = MemFs::new();
        let env = Env::new(Arc::new(mem.clone()));
        // About 100 KiB of log: several 32 KiB blocks.
        let (model, log) = closed_store(&mem, design, |db, model| put_all(db, model, 0..1500, 0));
        let mut bytes = env.read_all(&log, ReadCause::Other).unwrap();
        assert!(bytes.len() > 3 * 32768, "{}", bytes.len());
        bytes[40_000] ^= 0x01;
        rewrite(&mem, &log, &bytes);
        for mode in [M::TolerateCorruptedTailRecords, M::AbsoluteConsistency] {
            let mut o = opts(&env, design);
            o.wal_recovery_mode = mode;
            let e = Db::open(DIR, o).unwrap_err();
            assert_eq!(corruption_at(&e), log, "{design} {mode:?}");
        }
        let open_with = |mode| {
            let m = mem.fork();
            let mut o = opts(&Env::new(Arc::new(m)), design);
            o.wal_recovery_mode = mode;
            let db = Db::open(DIR, o).unwrap();
            let got = scan(&db);
            let dropped = db.stats().placement.wal_bytes_dropped;
            db.close().unwrap();
            (got, dropped)
        };
        let (pit, dropped) = open_with(M::PointInTimeRecovery);
        assert!(dropped >= bytes.len() as u64 - 40_000, "{dropped}");
        // A prefix of the writes (keys were written in order).
        let n = pit.len() as u32;
        assert!(n > 100 && n < 1500, "{n}");
        assert!((0..n).all(|i| pit.get(&key(i)) == model.get(&key(i))));
        let (skip, dropped) = open_with(M::SkipAnyCorruptedRecords);
        assert!(dropped > 0 && dropped <= 32768, "{dropped}");
        assert!(
            skip.len() > pit.len() && skip.len() < 1500,
            "{}",
            skip.len()
        );
        assert!(skip.iter().all(|(k, v)| model.get(k) == Some(v)));
        assert!(skip.contains_key(&key(1499)));
    }
}

/// Case 4: the MANIFEST's last record cut by one byte. It reads as an interrupted append,
/// but when that edit had committed (the files it retired are gone), open and verify must
/// say so rather than return the store without it: a deleted key must not come back while
/// a later write survives. Either the committed data comes back or both refuse the store.
#[test]
fn a_cut_last_manifest_record_never_drops_a_committed_edit() {
    for design in Options::available_presets() {
        for step in ["flush", "compaction"] {
            let mem = MemFs::new();
            let env = Env::new(Arc::new(mem.clone()));
            let mut o = opts(&env, design);
            o.write_buffer_size = 1 << 20;
            o.level0_compaction_trigger = 10;
            o.level0_slowdown_trigger = 20;
            o.level0_stop_trigger = 36;
            let db = Db::open(DIR, o).unwrap();
            let mut model = BTreeMap::new();
            for round in 0..3 {
                for i in 0..200 {
                    db.put(&key(i), &value(i, round)).unwrap();
                    model.insert(key(i), value(i, round));
                }
                db.flush().unwrap();
            }
            db.delete(&key(7)).unwrap();
            model.remove(&key(7));
            // The last edit: a flush retiring the log that holds the delete, or a
            // compaction deleting its inputs.
            db.flush().unwrap();
            if step == "compaction" {
                db.compact_range(None, None).unwrap();
            }
            db.put(&key(1000), b"later").unwrap();
            model.insert(key(1000), b"later".to_vec());
            // A crash image (no close, so the last edit stays the step's).
            let image = mem.fork();
            db.close().unwrap();
            let ienv = Env::new(Arc::new(image.clone()));
            let number = shale::manifest::read_current(&ienv, Path::new(DIR)).unwrap();
            let path = Path::new(DIR).join(shale::manifest::manifest_file_name(number));
            let bytes = ienv.read_all(&path, ReadCause::Other).unwrap();
            rewrite(&image, &path, &bytes[..bytes.len() - 1]);
            let verified = shale::verify(DIR, opts(&ienv, design));
            match Db::open(DIR, opts(&ienv, design)) {
                Ok(db) => {
                    assert_eq!(scan(&db), model, "{design} {step}: wrong data");
                    assert!(verified.is_ok(), "{design} {step}: open works, verify not");
                    db.close().unwrap();
                }
                Err(e) => {
                    assert!(e.is_corruption(), "{design} {step}: {e}");
                    let v = verified.unwrap_err();
                    assert_eq!(corruption_at(&v), corruption_at(&e), "{design} {step}");
                }
            }
        }
    }
}

/// Verify, the read-only open and open all accept the store and return exactly `model`,
/// and verify reports no torn tail.
fn open_and_verify_accept(
    mem: &MemFs,
    design: &str,
    model: &BTreeMap<Vec<u8>, Vec<u8>>,
    what: &str,
) {
    let env = Env::new(Arc::new(mem.clone()));
    let r = shale::verify(DIR, opts(&env, design));
    let r = r.unwrap_or_else(|e| panic!("{design} {what}: verify: {e}"));
    assert_eq!(r.placement.log_bytes_dropped, 0, "{design} {what}");
    let db = Db::open_read_only(DIR, opts(&env, design)).unwrap();
    assert_eq!(scan(&db), *model, "{design} {what}: read-only open");
    drop(db);
    let db = Db::open(DIR, opts(&env, design)).unwrap();
    assert_eq!(scan(&db), *model, "{design} {what}: open");
    db.close().unwrap();
}

/// Case 8: an empty or zeroed MANIFEST: open refuses the store, and verify (and the
/// read-only open) agree, naming the MANIFEST.
#[test]
fn an_empty_or_zeroed_manifest_fails_open_and_verify() {
    for design in Options::available_presets() {
        let (mem, env, _) = built(design);
        let number = shale::manifest::read_current(&env, Path::new(DIR)).unwrap();
        let path = Path::new(DIR).join(shale::manifest::manifest_file_name(number));
        let len = env.read_all(&path, ReadCause::Other).unwrap().len();
        for (what, bytes) in [
            ("empty MANIFEST", vec![]),
            ("zeroed MANIFEST", vec![0u8; len]),
        ] {
            let m = mem.fork();
            rewrite(&m, &path, &bytes);
            open_and_verify_refuse(&m, design, &path, what);
        }
    }
}

/// Case 8: what a kill -9 during a flush or compaction leaves, a table the MANIFEST does
/// not list cut short, and files Shale does not own whatever their extension: open
/// ignores them, so verify passes and the read-only open reads the committed data; open
/// removes the leftover table (it is the store's) and nothing that is not the store's.
#[test]
fn leftover_and_unknown_files_pass_verify_as_open_accepts_them() {
    for design in Options::available_presets() {
        let (mem, env, model) = built(design);
        let tables = names_with(&mem, |n| n.ends_with(".sst"));
        let largest = tables
            .iter()
            .filter_map(|p| shale::filename::parse_file_name(p.file_name()?.to_str()?))
            .filter_map(|k| k.number())
            .max()
            .unwrap();
        // A half-written table with the next number a flush would have drawn.
        let table = env.read_all(&tables[0], ReadCause::Other).unwrap();
        let half = Path::new(DIR).join(format!("{:06}.sst", largest + 50));
        let m = mem.fork();
        rewrite(&m, &half, &table[..table.len() / 2]);
        open_and_verify_accept(&m, design, &model, "half-written table");
        assert!(
            !m.file_names().contains(&half),
            "{design}: open keeps the leftover"
        );

        let m = mem.fork();
        let unknown = [
            "notes.sst",
            "7.sst",
            "98.vlog",
            "99.log",
            "backup.vlog",
            "000012.sst.bak",
        ];
        for name in unknown {
            rewrite(
                &m,
                &Path::new(DIR).join(name),
                b"not a store file, but a user's",
            );
        }
        open_and_verify_accept(&m, design, &model, "unknown files");
        for name in unknown {
            let p = Path::new(DIR).join(name);
            assert!(m.file_names().contains(&p), "{design}: {name} was removed");
        }
    }
}

/// Case 8: a torn tail of the newest log (a crash while a write was appended; the store
/// was not closed, so the log is not known complete): open drops it and keeps every
/// earlier write; verify passes and reports the bytes open would drop (the CLI's exit
/// code 5), and the read-only open drops it the same way without changing the file.
#[test]
fn a_torn_log_tail_passes_verify_and_is_reported() {
    for design in Options::available_presets() {
        let mem = MemFs::new();
        let env = Env::new(Arc::new(mem.clone()));
        let mut o = opts(&env, design);
        o.write_buffer_size = 1 << 20;
        let db = Db::open(DIR, o).unwrap();
        let mut model = BTreeMap::new();
        put_all(&db, &mut model, 0..300, 0);
        db.flush().unwrap();
        put_all(&db, &mut model, 0..100, 1);
        // The last write, which the crash tears.
        db.put(&key(100), &value(100, 1)).unwrap();
        let image = mem.fork();
        db.close().unwrap();
        let ienv = Env::new(Arc::new(image.clone()));
        let ext = if design == "wisckey" { ".vlog" } else { ".log" };
        let log = names_with(&image, |n| n.ends_with(ext))
            .into_iter()
            .max()
            .unwrap();
        let bytes = ienv.read_all(&log, ReadCause::Other).unwrap();
        // Where the written bytes end (a log's reserved tail reads as zeros).
        let end = bytes.iter().rposition(|&b| b != 0).unwrap() + 1;
        rewrite(&image, &log, &bytes[..end - 20]);
        let r = shale::verify(DIR, opts(&ienv, design)).unwrap();
        assert!(r.placement.log_bytes_dropped > 0, "{design}: {r:?}");
        let before = files(&image);
        let ro = Db::open_read_only(DIR, opts(&ienv, design)).unwrap();
        assert_eq!(scan(&ro), model, "{design}: read-only open");
        assert!(ro.stats().placement.wal_bytes_dropped > 0, "{design}");
        drop(ro);
        same_files(&image, &before, &format!("{design}: read-only open"));
        let db = Db::open(DIR, opts(&ienv, design)).unwrap();
        assert_eq!(scan(&db), model, "{design}: open");
        db.close().unwrap();
        // Recovery wrote the store whole again: nothing left to drop.
        let r = shale::verify(DIR, opts(&ienv, design)).unwrap();
        assert_eq!(r.placement.log_bytes_dropped, 0, "{design}");
    }
}

/// A MANIFEST whose format version this release does not know (a store written by a newer
/// release) is refused by open and by verify, naming the MANIFEST and the version.
#[test]
fn a_manifest_of_a_newer_format_version_is_refused() {
    for design in Options::available_presets() {
        let env = Env::memory();
        build(&env, design);
        let dir = Path::new(DIR);
        let mut w = shale::manifest::ManifestWriter::create(&env, dir, 999_999).unwrap();
        w.append(&shale::manifest::VersionEdit {
            manifest_version: Some(shale::manifest::MANIFEST_FORMAT_VERSION + 1),
            ..Default::default()
        })
        .unwrap();
        drop(w);
        shale::manifest::write_current(&env, dir, 999_999).unwrap();
        for (what, r) in [
            ("open", Db::open(DIR, opts(&env, design)).map(|_| ())),
            ("verify", shale::verify(DIR, opts(&env, design)).map(|_| ())),
        ] {
            match r {
                Err(Error::Corruption { file, detail, .. }) => {
                    assert!(
                        file.ends_with("MANIFEST-999999"),
                        "{design} {what}: {file:?}"
                    );
                    assert!(
                        detail.contains("format version 2"),
                        "{design} {what}: {detail}"
                    );
                }
                other => panic!("{design} {what}: expected Corruption, got {other:?}"),
            }
        }
    }
}
