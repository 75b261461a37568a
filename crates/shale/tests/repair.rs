//! `shale::repair` (LevelDB's `RepairDB`, issues 18 and 23) over every preset: a store
//! whose MANIFEST and CURRENT are gone, one with a damaged table, one never flushed, and a
//! healthy one all repair to the data they hold (deleted keys stay deleted, the newest
//! version wins); the repaired store passes `verify` and takes writes; what repair cannot
//! use is in `lost/`, never deleted.

#![expect(clippy::unwrap_used, reason = "test setup failures fail the test")]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use shale::env::mem::MemFs;
use shale::env::{Env, FileSystem, ReadCause};
use shale::{Db, Options, RepairReport};

const DIR: &str = "/db";
const KEYS: u32 = 600;

/// What each key must read: its value, or `None` for a key deleted or never written.
type Model = BTreeMap<Vec<u8>, Option<Vec<u8>>>;

fn opts(env: &Env, design: &str) -> Options {
    let mut o = Options::preset(design).unwrap().with_env(env.clone());
    o.write_buffer_size = 16 * 1024;
    o.target_file_size = 8 * 1024;
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

fn fresh() -> (MemFs, Env) {
    let mem = MemFs::new();
    let env = Env::new(Arc::new(mem.clone()));
    (mem, env)
}

/// Rounds of puts, overwrites and deletes over `KEYS` keys: flushed, compacted down (so
/// that tables of different levels overlap in keys and sequence numbers), flushed again, and
/// a last round left in the log. Returns what every key must read.
fn build(env: &Env, design: &str) -> Model {
    let db = Db::open(DIR, opts(env, design)).unwrap();
    let mut model = Model::new();
    let put = |model: &mut Model, i: u32, round: u32| {
        db.put(&key(i), &value(i, round)).unwrap();
        model.insert(key(i), Some(value(i, round)));
    };
    let del = |model: &mut Model, i: u32| {
        db.delete(&key(i)).unwrap();
        model.insert(key(i), None);
    };
    for i in 0..KEYS {
        put(&mut model, i, 0);
    }
    db.flush().unwrap();
    for i in (0..KEYS).step_by(3) {
        put(&mut model, i, 1);
    }
    for i in (0..KEYS).step_by(5) {
        del(&mut model, i);
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    for i in (0..KEYS).step_by(7) {
        put(&mut model, i, 2);
    }
    for i in (0..KEYS).step_by(11) {
        del(&mut model, i);
    }
    db.flush().unwrap();
    for i in (0..KEYS).step_by(13) {
        put(&mut model, i, 3);
    }
    for i in (0..KEYS).step_by(17) {
        del(&mut model, i);
    }
    db.close().unwrap();
    model
}

/// Every key of `model` reads as the model says, except those `skip` accepts.
fn check(db: &Db, model: &Model, what: &str, skip: impl Fn(&[u8]) -> bool) {
    for (k, want) in model {
        if skip(k) {
            continue;
        }
        let got = db.get(k).unwrap();
        assert_eq!(
            got.as_deref(),
            want.as_deref(),
            "{what}: {}",
            String::from_utf8_lossy(k)
        );
    }
}

/// The repaired store passes `verify`, reads `model`, takes writes, and reads them and
/// `model` again after a reopen. Returns the model with those writes.
fn check_repaired(
    env: &Env,
    design: &str,
    model: &Model,
    what: &str,
    skip: impl Fn(&[u8]) -> bool,
) -> Model {
    shale::verify(DIR, opts(env, design)).unwrap_or_else(|e| panic!("{what}: verify: {e}"));
    let db = Db::open(DIR, opts(env, design)).unwrap();
    check(&db, model, what, &skip);
    let mut model = model.clone();
    for i in KEYS..KEYS + 300 {
        db.put(&key(i), &value(i, 9)).unwrap();
        model.insert(key(i), Some(value(i, 9)));
    }
    for i in (0..KEYS).step_by(19) {
        db.put(&key(i), &value(i, 9)).unwrap();
        model.insert(key(i), Some(value(i, 9)));
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    db.close().unwrap();
    let db = Db::open(DIR, opts(env, design)).unwrap();
    check(&db, &model, &format!("{what}, after writes"), &skip);
    db.close().unwrap();
    shale::verify(DIR, opts(env, design))
        .unwrap_or_else(|e| panic!("{what}: verify after writes: {e}"));
    model
}

fn names(env: &Env, dir: &str) -> Vec<String> {
    let mut n = env.fs().list_dir(Path::new(dir)).unwrap_or_default();
    n.sort();
    n
}

fn write_file(env: &Env, path: &Path, bytes: &[u8]) {
    let mut f = env.fs().create(path).unwrap();
    f.append(bytes).unwrap();
    f.sync().unwrap();
}

fn repair(env: &Env, design: &str) -> RepairReport {
    shale::repair(DIR, opts(env, design)).unwrap_or_else(|e| panic!("{design}: repair: {e}"))
}

#[test]
fn a_healthy_store_repairs_to_the_same_data() {
    for design in Options::available_presets() {
        let (_mem, env) = fresh();
        let model = build(&env, design);
        let r = repair(&env, design);
        assert!(r.set_aside.is_empty(), "{design}: {:?}", r.set_aside);
        assert!(r.hints_from.is_some(), "{design}");
        assert!(r.tables > 0, "{design}: {r:?}");
        // The unflushed round was in the log: converted, the log archived.
        assert!(
            r.logs.iter().any(|l| l.entries > 0),
            "{design}: {:?}",
            r.logs
        );
        let model = check_repaired(&env, design, &model, design, |_| false);
        // Repairing the repaired store again changes nothing it reads.
        repair(&env, design);
        check_repaired(&env, design, &model, &format!("{design}, twice"), |_| false);
    }
}

#[test]
fn a_store_without_manifest_and_current_repairs_to_all_its_data() {
    for design in Options::available_presets() {
        let (mem, env) = fresh();
        let model = build(&env, design);
        for n in names(&env, DIR) {
            if n == "CURRENT" || n.starts_with("MANIFEST-") {
                mem.remove_file(&Path::new(DIR).join(n)).unwrap();
            }
        }
        assert!(Db::open(DIR, opts(&env, design)).is_err(), "{design}");
        let r = repair(&env, design);
        assert!(r.hints_from.is_none(), "{design}");
        assert!(r.set_aside.is_empty(), "{design}: {:?}", r.set_aside);
        check_repaired(&env, design, &model, design, |_| false);
    }
}

#[test]
fn a_damaged_table_loses_only_its_keys_and_goes_to_lost() {
    for design in Options::available_presets() {
        let (_mem, env) = fresh();
        let model = build(&env, design);
        // The largest table the store lists, damaged in its middle.
        let live = {
            let db = Db::open_read_only(DIR, opts(&env, design)).unwrap();
            db.live_files()
        };
        let victim = live.iter().max_by_key(|f| f.size).unwrap();
        let name = format!("{:06}.sst", victim.number);
        let path = Path::new(DIR).join(&name);
        let mut bytes = env.read_all(&path, ReadCause::Other).unwrap();
        let at = bytes.len() / 3;
        for b in &mut bytes[at..at + 8] {
            *b ^= 0x5a;
        }
        write_file(&env, &path, &bytes);
        assert!(shale::verify(DIR, opts(&env, design)).is_err(), "{design}");

        let r = repair(&env, design);
        let aside: Vec<_> = r.set_aside.iter().filter(|s| s.name == name).collect();
        assert_eq!(aside.len(), 1, "{design}: {:?}", r.set_aside);
        let aside = aside[0];
        assert!(!env.fs().exists(&path).unwrap(), "{design}");
        let moved = env
            .read_all(&Path::new(DIR).join(&aside.moved_to), ReadCause::Other)
            .unwrap();
        assert_eq!(
            moved, bytes,
            "{design}: the damaged table is in lost/ as it was"
        );
        let (lo, hi) = aside.key_range.clone().unwrap();
        assert_eq!(aside.entries, Some(victim.entries), "{design}");
        // Keys outside the damaged table's range read as before; inside, a key may have
        // lost its newest version.
        let lost = |k: &[u8]| lo.as_slice() <= k && k <= hi.as_slice();
        check_repaired(&env, design, &model, design, lost);
    }
}

#[test]
fn a_store_never_flushed_repairs_from_its_logs() {
    for design in Options::available_presets() {
        for drop_manifest in [false, true] {
            let what = format!("{design}, MANIFEST dropped: {drop_manifest}");
            let (mem, env) = fresh();
            let db = Db::open(DIR, opts(&env, design)).unwrap();
            let mut model = Model::new();
            for i in 0..60 {
                db.put(&key(i), &value(i, 0)).unwrap();
                model.insert(key(i), Some(value(i, 0)));
            }
            for i in (0..60).step_by(4) {
                db.delete(&key(i)).unwrap();
                model.insert(key(i), None);
            }
            db.close().unwrap();
            assert!(
                names(&env, DIR).iter().all(|n| !n.ends_with(".sst")),
                "{what}: nothing flushed: {:?}",
                names(&env, DIR)
            );
            if drop_manifest {
                for n in names(&env, DIR) {
                    if n == "CURRENT" || n.starts_with("MANIFEST-") {
                        mem.remove_file(&Path::new(DIR).join(n)).unwrap();
                    }
                }
            }
            let r = repair(&env, design);
            let replayed: u64 = r.logs.iter().map(|l| l.entries).sum();
            assert_eq!(replayed, 75, "{what}: {:?}", r.logs);
            assert_eq!(r.tables_from_logs, r.tables, "{what}");
            assert!(
                names(&env, &format!("{DIR}/lost"))
                    .iter()
                    .any(|n| n.starts_with("MANIFEST-")
                        || n.ends_with(".log")
                        || n.ends_with(".vlog")),
                "{what}"
            );
            check_repaired(&env, design, &model, &what, |_| false);
        }
    }
}

/// A crash image taken while the store was open: its newest log keeps the zeros it reserved
/// ahead of its writer (`Env::create_log`). Repair reads them as the log's end, not as a
/// torn tail or dropped bytes.
#[test]
fn a_crash_image_repairs_without_calling_reserved_zeros_damage() {
    for design in Options::available_presets() {
        let (mem, env) = fresh();
        let (db, model) = sixty_puts(&env, design);
        let image = mem.fork();
        drop(db);
        let ienv = Env::new(Arc::new(image.clone()));
        let zeros_after_records = names(&ienv, DIR).iter().any(|n| {
            let path = Path::new(DIR).join(n);
            (n.ends_with(".log") || n.ends_with(".vlog"))
                && env_bytes(&ienv, &path).last() == Some(&0)
        });
        assert!(
            zeros_after_records,
            "{design}: the image keeps a reservation"
        );
        let r = repair(&ienv, design);
        for l in &r.logs {
            assert!(
                l.damage.is_none() && l.bytes_dropped == 0,
                "{design}: {l:?}"
            );
        }
        let replayed: u64 = r.logs.iter().map(|l| l.entries).sum();
        assert_eq!(replayed, 60, "{design}: {:?}", r.logs);
        check_repaired(&ienv, design, &model, design, |_| false);
    }
}

/// A store of `design` open with 60 keys put and nothing flushed, and what they read.
fn sixty_puts(env: &Env, design: &str) -> (Db, Model) {
    let db = Db::open(DIR, opts(env, design)).unwrap();
    let mut model = Model::new();
    for i in 0..60 {
        db.put(&key(i), &value(i, 0)).unwrap();
        model.insert(key(i), Some(value(i, 0)));
    }
    (db, model)
}

fn env_bytes(env: &Env, path: &Path) -> Vec<u8> {
    env.read_all(path, ReadCause::Other).unwrap()
}

#[test]
fn a_damaged_log_tail_keeps_the_records_before_it() {
    for design in Options::available_presets() {
        let (_mem, env) = fresh();
        let (db, model) = sixty_puts(&env, design);
        db.close().unwrap();
        let log = names(&env, DIR)
            .into_iter()
            .filter(|n| n.ends_with(".log") || n.ends_with(".vlog"))
            .max_by_key(|n| env.fs().file_size(&Path::new(DIR).join(n)).unwrap())
            .unwrap();
        let path = Path::new(DIR).join(&log);
        let mut bytes = env.read_all(&path, ReadCause::Other).unwrap();
        // The last record's bytes (its value's last characters).
        let at = bytes.len() - 3;
        bytes[at] ^= 0x40;
        write_file(&env, &path, &bytes);
        let r = repair(&env, design);
        let l = r.logs.iter().find(|l| l.name == log).unwrap();
        assert!(l.damage.is_some() && l.bytes_dropped > 0, "{design}: {l:?}");
        assert!(l.entries >= 50 && l.entries < 60, "{design}: {l:?}");
        // Keys before the damage read; the damaged record's key is gone.
        let kept = l.entries as u32;
        let before: Model = model
            .iter()
            .filter(|(k, _)| k.as_slice() < key(kept).as_slice())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        check_repaired(&env, design, &before, design, |_| false);
        let db = Db::open(DIR, opts(&env, design)).unwrap();
        assert_eq!(db.get(&key(59)).unwrap(), None, "{design}");
        db.close().unwrap();
    }
}

#[test]
fn repair_refuses_a_directory_without_a_store_and_an_open_store() {
    let (_mem, env) = fresh();
    env.fs().create_dir_all(Path::new(DIR)).unwrap();
    write_file(&env, &Path::new(DIR).join("notes.txt"), b"mine");
    let e = shale::repair(DIR, opts(&env, "leveldb")).unwrap_err();
    assert!(matches!(e, shale::Error::InvalidArgument(_)), "{e}");
    let e = shale::repair("/nothing", opts(&env, "leveldb")).unwrap_err();
    assert!(matches!(e, shale::Error::InvalidArgument(_)), "{e}");
    let db = Db::open("/open", opts(&env, "leveldb")).unwrap();
    db.put(b"k", b"v").unwrap();
    let e = shale::repair("/open", opts(&env, "leveldb")).unwrap_err();
    assert!(matches!(e, shale::Error::Locked { .. }), "{e}");
    db.close().unwrap();
    assert_eq!(
        env.read_all(&Path::new(DIR).join("notes.txt"), ReadCause::Other)
            .unwrap(),
        b"mine"
    );
}

/// Without a MANIFEST, a store of the wrong design is refused unchanged rather than its
/// files set aside.
#[test]
fn without_a_manifest_the_wrong_design_is_refused_unchanged() {
    let (mem, env) = fresh();
    build(&env, "wisckey");
    for n in names(&env, DIR) {
        if n == "CURRENT" || n.starts_with("MANIFEST-") {
            mem.remove_file(&Path::new(DIR).join(n)).unwrap();
        }
    }
    let before = names(&env, DIR);
    for other in ["leveldb", "lsm-trie"] {
        let e = shale::repair(DIR, opts(&env, other)).unwrap_err();
        assert!(
            matches!(e, shale::Error::InvalidArgument(_)),
            "{other}: {e}"
        );
        assert_eq!(names(&env, DIR), before, "{other}");
    }
}

/// Two tables whose key ranges and sequence ranges both overlap, as two levels of a tree
/// leave them: table 10 (a deeper level's) holds keys 0..100 at their newest version and
/// keys 100..200 at an old one; table 11 (a level above) holds keys 100..200 at a version
/// between the two. Level 0 orders tables by their newest sequence number, so table 10
/// would answer keys 100..200 with the old version: repair merges the two, and every key
/// reads its newest version.
#[test]
fn tables_that_level_0_cannot_order_are_merged() {
    use shale::env::WriteCause;
    use shale::key::{ValueKind, make_internal_key};
    use shale::table::{TableFormat, TableIdentity};
    const STORE: u64 = 0x1234_5678;
    for design in Options::available_presets() {
        let (_mem, env) = fresh();
        let o = opts(&env, design);
        let format: Box<dyn TableFormat> = match o.table_format {
            shale::TableKind::Sst => Box::new(shale::table::SstFormat),
            shale::TableKind::HTable => Box::new(shale::table::htable::HTableFormat),
            shale::TableKind::DTable => Box::new(shale::table::DTableFormat),
            other => panic!("{design}: a table format this test does not know: {other:?}"),
        };
        env.fs().create_dir_all(Path::new(DIR)).unwrap();
        let write = |number: u64, entries: &[(u32, u64, u32)]| {
            let path = Path::new(DIR).join(format!("{number:06}.sst"));
            let file = env.create(&path, WriteCause::Flush).unwrap();
            let identity = TableIdentity {
                store_id: STORE,
                number,
            };
            let mut w = format.builder(file, &o.table, Some(identity));
            for &(i, seq, round) in entries {
                let ikey = make_internal_key(&key(i), seq, ValueKind::Value);
                w.add(&ikey, &value(i, round)).unwrap();
            }
            w.finish().unwrap();
        };
        // Round 0 (sequence 1..=200), round 1 (keys 100..200, 201..=300), round 2 (keys
        // 0..100, 301..=400).
        let deep: Vec<(u32, u64, u32)> = (0..200)
            .map(|i| {
                if i < 100 {
                    (i, 301 + u64::from(i), 2)
                } else {
                    (i, 1 + u64::from(i), 0)
                }
            })
            .collect();
        let above: Vec<(u32, u64, u32)> = (100..200).map(|i| (i, 101 + u64::from(i), 1)).collect();
        write(10, &deep);
        write(11, &above);
        let mut model = Model::new();
        for i in 0..200 {
            model.insert(key(i), Some(value(i, if i < 100 { 2 } else { 1 })));
        }
        let r = repair(&env, design);
        assert_eq!(r.store_id, STORE, "{design}");
        assert_eq!(r.tables_merged, 2, "{design}: {r:?}");
        assert!(r.set_aside.is_empty(), "{design}: {:?}", r.set_aside);
        check_repaired(&env, design, &model, design, |_| false);
    }
}

/// The `.vlog` segments in `DIR`.
fn segments(env: &Env) -> Vec<String> {
    names(env, DIR)
        .into_iter()
        .filter(|n| n.ends_with(".vlog"))
        .collect()
}

/// After repair of a value-log store, forced collection still reclaims the segments whose
/// records were all overwritten before the repair: repair recounts each kept segment's
/// garbage (the old MANIFEST's counts are what it repairs), so the segments are not kept
/// forever as live.
#[test]
fn forced_gc_after_repair_drops_overwritten_segments() {
    for lose_manifest in [false, true] {
        let (mem, env) = fresh();
        let db = Db::open(DIR, opts(&env, "wisckey")).unwrap();
        for round in 0..2 {
            for i in 0..KEYS {
                db.put(&key(i), &value(i, round)).unwrap();
            }
            db.flush().unwrap();
        }
        db.close().unwrap();
        let before = segments(&env);
        // Control: without repair, forced collection drops the first round's segments.
        let control = Env::new(Arc::new(mem.fork()));
        let db = Db::open(DIR, opts(&control, "wisckey")).unwrap();
        let mut dropped_control = 0;
        while db.run_value_gc().unwrap() > 0 {
            dropped_control += 1;
        }
        db.close().unwrap();
        assert!(dropped_control > 0, "the control collects nothing");

        if lose_manifest {
            for n in names(&env, DIR) {
                if n.starts_with("MANIFEST-") || n == "CURRENT" {
                    env.fs().remove_file(&Path::new(DIR).join(n)).unwrap();
                }
            }
        }
        repair(&env, "wisckey");
        let db = Db::open(DIR, opts(&env, "wisckey")).unwrap();
        let mut dropped = 0;
        while db.run_value_gc().unwrap() > 0 {
            dropped += 1;
        }
        for i in 0..KEYS {
            assert_eq!(db.get(&key(i)).unwrap(), Some(value(i, 1)));
        }
        db.close().unwrap();
        assert_eq!(
            dropped,
            dropped_control,
            "lose_manifest {lose_manifest}: segments before {before:?}, after {:?}",
            segments(&env)
        );
    }
}
