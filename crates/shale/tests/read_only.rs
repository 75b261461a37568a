//! `Db::open_read_only` (issue 18): it writes nothing, replays the log into memory, refuses
//! writes, and beside a writer keeps reading its own version while the writer compacts and
//! deletes files, or fails with an error that says so; never another version's data. Every
//! design preset.

#![expect(clippy::unwrap_used, reason = "test setup failures fail the test")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use shale::env::fault::{FaultFs, OpView};
use shale::env::mem::MemFs;
use shale::env::{Env, FileSystem, ReadCause};
use shale::{Db, Error, IterOptions, Options, WriteBatch};

const DIR: &str = "/db";

fn opts(env: &Env, design: &str) -> Options {
    let mut o = Options::preset(design).unwrap().with_env(env.clone());
    o.write_buffer_size = 16 * 1024;
    o.target_file_size = 8 * 1024;
    o.max_bytes_for_level_base = 64 * 1024;
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

/// Put keys `keys` with values of `round` into `db` and `model`.
fn put_all(
    db: &Db,
    model: &mut BTreeMap<Vec<u8>, Vec<u8>>,
    keys: impl Iterator<Item = u32>,
    round: u32,
) {
    for i in keys {
        db.put(&key(i), &value(i, round)).unwrap();
        model.insert(key(i), value(i, round));
    }
}

/// Everything the store holds: a scan, or for a store that answers point reads only
/// (`Db::supports_scans`), a get of every key these tests write (`key(0..1000)`).
fn scan(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    if !db.supports_scans() {
        return (0..1000)
            .map(key)
            .chain([b"after".to_vec()])
            .filter_map(|k| db.get(&k).unwrap().map(|v| (k, v)))
            .collect();
    }
    db.iter(IterOptions::default())
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Every get and a full scan (both directions) return exactly `model`.
fn reads_exactly(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, what: &str) {
    let got = scan(db);
    let differ: Vec<String> = got
        .iter()
        .filter(|(k, v)| model.get(*k) != Some(*v))
        .chain(model.iter().filter(|(k, v)| got.get(*k) != Some(*v)))
        .map(|(k, v)| {
            format!(
                "{}={}",
                String::from_utf8_lossy(k),
                String::from_utf8_lossy(v)
            )
        })
        .take(10)
        .collect();
    assert!(differ.is_empty(), "{what}: scan differs at {differ:?}");
    if !db.supports_scans() {
        assert!(matches!(
            db.iter(IterOptions::default()),
            Err(Error::Unsupported(_))
        ));
        assert_eq!(db.get(b"never written").unwrap(), None, "{what}");
        return;
    }
    let back: Vec<(Vec<u8>, Vec<u8>)> = db
        .iter(IterOptions::default())
        .unwrap()
        .rev()
        .map(Result::unwrap)
        .collect();
    let forward: Vec<(Vec<u8>, Vec<u8>)> = model.clone().into_iter().collect();
    assert!(back.into_iter().rev().eq(forward), "{what}: reverse scan");
    for (k, v) in model {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{what}: get");
    }
    assert_eq!(db.get(b"never written").unwrap(), None, "{what}");
}

/// Every file (LOCK included) and its bytes.
fn files(mem: &MemFs) -> BTreeMap<PathBuf, Vec<u8>> {
    let env = Env::new(Arc::new(mem.clone()));
    mem.file_names()
        .into_iter()
        .map(|p| {
            let b = env.read_all(&p, ReadCause::Other).unwrap();
            (p, b)
        })
        .collect()
}

fn names_with(mem: &MemFs, ext: &str) -> Vec<PathBuf> {
    mem.file_names()
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect()
}

/// A store of `design` with data in tables at several levels, overwrites and deletes in
/// the log (never flushed), closed or left open as a crash would.
fn build(env: &Env, design: &str) -> (Db, BTreeMap<Vec<u8>, Vec<u8>>) {
    let db = Db::open(DIR, opts(env, design)).unwrap();
    let mut model = BTreeMap::new();
    put_all(&db, &mut model, 0..600, 0);
    db.compact_range(None, None).unwrap();
    put_all(&db, &mut model, (0..600).step_by(5), 1);
    db.flush().unwrap();
    put_all(&db, &mut model, (0..600).step_by(7), 2);
    for i in (0..600).step_by(11) {
        db.delete(&key(i)).unwrap();
        model.remove(&key(i));
    }
    (db, model)
}

fn is_read_only_open(r: shale::Result<impl std::fmt::Debug>) -> bool {
    matches!(r, Err(Error::ReadOnlyOpen { .. }))
}

/// A read-only open makes no mutating file-system call at all (the fault-injecting file
/// system counts every create, append, sync, rename, remove and lock), changes no byte,
/// replays the unflushed log into memory (the store reads exactly as written) and refuses
/// every kind of write. Both after a clean close and with the writer still open (its log
/// unsealed, its LOCK held).
#[test]
fn writes_nothing_and_reads_everything() {
    for design in Options::available_presets() {
        for writer_open in [false, true] {
            let what = format!("{design}, writer open: {writer_open}");
            let mem = MemFs::new();
            let fault = FaultFs::new(mem.clone());
            let control = fault.control();
            let env = Env::new(Arc::new(fault));
            let (writer, model) = build(&env, design);
            let writer = if writer_open {
                Some(writer)
            } else {
                writer.close().unwrap();
                None
            };
            // Mutating calls made by this thread (the reader's); the writer's background
            // threads (`shale-*`) may still be compacting.
            let ours = Arc::new(Mutex::new(Vec::new()));
            {
                let ours = Arc::clone(&ours);
                control.set_hook(Some(Arc::new(move |v: &OpView<'_>| {
                    let writer_thread = std::thread::current()
                        .name()
                        .is_some_and(|n| n.starts_with("shale-"));
                    if !writer_thread {
                        ours.lock().unwrap().push(v.op().to_string());
                    }
                })));
            }
            // (With the writer open its background threads may still change files.)
            let before = (!writer_open).then(|| files(&mem));
            let db = Db::open_read_only(DIR, opts(&env, design)).unwrap();
            reads_exactly(&db, &model, &what);
            let snap = db.snapshot();
            assert_eq!(
                db.get_at(&key(1), &snap).unwrap(),
                model.get(&key(1)).cloned()
            );
            assert!(is_read_only_open(db.put(b"k", b"v")), "{what}");
            assert!(is_read_only_open(db.delete(&key(1))), "{what}");
            let mut b = WriteBatch::new();
            b.put(b"k", b"v");
            assert!(is_read_only_open(db.write(b)), "{what}");
            assert!(is_read_only_open(db.flush()), "{what}");
            assert!(is_read_only_open(db.compact_range(None, None)), "{what}");
            assert!(is_read_only_open(db.run_value_gc()), "{what}");
            let e = db.put(b"k", b"v").unwrap_err().to_string();
            assert!(e.contains("read-only") && e.contains(DIR), "{e}");
            // A clean log has no torn tail; the log's reserved zeros are none.
            assert_eq!(db.stats().placement.wal_bytes_dropped, 0, "{what}");
            reads_exactly(&db, &model, &what);
            drop(snap);
            db.close().unwrap();
            // Two read-only handles side by side, and verify beside them.
            let a = Db::open_read_only(DIR, opts(&env, design)).unwrap();
            let b = Db::open_read_only(DIR, opts(&env, design)).unwrap();
            shale::verify(DIR, opts(&env, design)).unwrap();
            assert_eq!(scan(&a), scan(&b), "{what}");
            drop((a, b));
            control.set_hook(None);
            assert!(
                ours.lock().unwrap().is_empty(),
                "{what}: {:?}",
                ours.lock().unwrap()
            );
            if let Some(before) = before {
                assert!(files(&mem) == before, "{what}: a file changed");
            }
            if let Some(w) = writer {
                // The writer is unaffected and reopens with everything.
                w.put(b"after", b"x").unwrap();
                w.close().unwrap();
                let mut model = model;
                model.insert(b"after".to_vec(), b"x".to_vec());
                let db = Db::open(DIR, opts(&env, design)).unwrap();
                reads_exactly(&db, &model, &what);
                db.close().unwrap();
            }
        }
    }
}

/// No store, or a damaged one: the same errors as a read-write open, and nothing created.
#[test]
fn refuses_what_open_refuses_and_creates_nothing() {
    for design in Options::available_presets() {
        let mem = MemFs::new();
        let env = Env::new(Arc::new(mem.clone()));
        let e = Db::open_read_only(DIR, opts(&env, design)).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{design}: {e}");
        assert!(e.to_string().contains("no store"), "{e}");
        assert!(!env.fs().exists(Path::new(DIR)).unwrap(), "{design}");
        env.fs().create_dir_all(Path::new(DIR)).unwrap();
        let e = Db::open_read_only(DIR, opts(&env, design)).unwrap_err();
        assert!(e.to_string().contains("no store"), "{design}: {e}");
        assert!(env.fs().list_dir(Path::new(DIR)).unwrap().is_empty());
        // A table the MANIFEST lists is gone: open and read-only open name it.
        let (db, _) = build(&env, design);
        db.close().unwrap();
        let table = names_with(&mem, "sst").into_iter().next().unwrap();
        mem.remove_file(&table).unwrap();
        for e in [
            Db::open_read_only(DIR, opts(&env, design)).unwrap_err(),
            Db::open(DIR, opts(&env, design)).unwrap_err(),
        ] {
            match &e {
                Error::Corruption { file, .. } => assert_eq!(file, &table, "{design}: {e}"),
                other => panic!("{design}: {other}"),
            }
        }
    }
}

/// `o` with every flush kept a level-0 table until `compact_range`: which tables exist when
/// does not depend on when background compactions run.
fn no_background_compaction(mut o: Options) -> Options {
    o.level0_compaction_trigger = 10_000;
    o.level0_slowdown_trigger = 10_000;
    o.level0_stop_trigger = 10_000;
    o
}

/// Keys `0..n` of round 0 flushed and compacted, then more rounds of part of them left in
/// tables and the log; returns the writer and its model.
fn loaded(o: Options, n: u32) -> (Db, BTreeMap<Vec<u8>, Vec<u8>>) {
    let db = Db::open(DIR, o).unwrap();
    let mut model = BTreeMap::new();
    put_all(&db, &mut model, 0..n, 0);
    db.flush().unwrap();
    put_all(&db, &mut model, (0..n).step_by(3), 1);
    (db, model)
}

/// Beside a writer (here in the same process: the read-only handle takes no lock and the
/// writer does not know it, as with another process), the writer overwrites every key,
/// flushes, compacts the whole tree and collects value-log garbage, deleting every table
/// and segment the read-only handle's version uses. The handle still reads exactly its
/// version; a new read-only handle reads the writer's.
#[test]
fn keeps_its_version_while_the_writer_deletes_its_files() {
    for design in Options::available_presets() {
        let mem = MemFs::new();
        let env = Env::new(Arc::new(mem.clone()));
        let (writer, mut model) = loaded(no_background_compaction(opts(&env, design)), 800);
        let old_model = model.clone();
        let reader = Db::open_read_only(DIR, opts(&env, design)).unwrap();
        reads_exactly(&reader, &old_model, design);
        let tables_before = names_with(&mem, "sst");
        let segments_before = names_with(&mem, "vlog");
        put_all(&writer, &mut model, 0..800, 2);
        writer.compact_range(None, None).unwrap();
        for _ in 0..100 {
            if writer.run_value_gc().unwrap() == 0 {
                break;
            }
        }
        let gone = |before: &[PathBuf], ext| {
            let now = names_with(&mem, ext);
            before.iter().filter(|p| !now.contains(p)).count()
        };
        assert!(
            gone(&tables_before, "sst") > 0,
            "{design}: no table deleted"
        );
        if design == "wisckey" {
            assert!(
                gone(&segments_before, "vlog") > 0,
                "{design}: no segment deleted"
            );
        }
        reads_exactly(&reader, &old_model, &format!("{design}: the old version"));
        let fresh = Db::open_read_only(DIR, opts(&env, design)).unwrap();
        reads_exactly(&fresh, &model, &format!("{design}: the new version"));
        drop(fresh);
        drop(reader);
        writer.close().unwrap();
    }
}

/// With more tables than `max_open_files`, a read-only handle opens them on first use: one
/// the writer deleted since fails that read with an error saying a writer may have deleted
/// it; no read returns another version's value.
#[test]
fn tables_beyond_the_open_file_budget_fail_clearly_once_deleted() {
    for design in Options::available_presets() {
        let mem = MemFs::new();
        let env = Env::new(Arc::new(mem.clone()));
        let mut o = opts(&env, design);
        o.max_open_files = 16;
        o.target_file_size = 4 * 1024;
        o.write_buffer_size = 8 * 1024;
        // A table per memtable: flushes are the only way tables are made here.
        o.min_memtables_to_merge = 1;
        // The level-0 triggers keep leveled layouts from compacting, not LSM-trie's
        // containers: its root compacts into its children once its pile holds
        // `max_sub_levels` tables, and how many tables the children then hold depends on
        // how far compactions lagged the flushes (a clean-clone CI run counted 16 where
        // local runs count 52-67). With the largest pile and fewer keys (about 40 flushes)
        // its root holds every flushed table and nothing compacts before the count.
        o.trie.max_sub_levels = 64;
        let o = no_background_compaction(o);
        // Tables of value pointers are small: more keys make as many tables.
        let keys = match design {
            "wisckey" => 8000,
            "lsm-trie" => 1800,
            _ => 3000,
        };
        let (writer, mut model) = loaded(o.clone(), keys);
        writer.flush().unwrap();
        // Nothing should be compacting; should anything be, the reader must open the version
        // counted here (one compacted further after the count could need no more tables
        // than the reader keeps open, and no read would meet a deleted one).
        writer.wait_for_compactions().unwrap();
        let live = writer.live_files().len();
        assert!(live > 16, "{design}: only {live} tables");
        let old_model = model.clone();
        let reader = Db::open_read_only(DIR, o.clone()).unwrap();
        let seen = reader.live_files().len();
        assert!(
            seen > 16,
            "{design}: the reader's version has only {seen} tables"
        );
        put_all(&writer, &mut model, 0..keys, 2);
        writer.compact_range(None, None).unwrap();
        let mut failed = 0;
        for (k, v) in &old_model {
            match reader.get(k) {
                Ok(got) => assert_eq!(got.as_ref(), Some(v), "{design}: a wrong value"),
                Err(e) => {
                    let m = e.to_string();
                    assert!(m.contains("deleted by a writer"), "{design}: {m}");
                    failed += 1;
                }
            }
        }
        assert!(
            failed > 0,
            "{design}: every read succeeded, no table was deleted?"
        );
        drop(reader);
        writer.close().unwrap();
    }
}

/// A writer thread overwrites keys in rounds (so every state it passes through is a prefix
/// of its history: keys below some point hold round `r`, the rest round `r - 1`) while its
/// memtables flush and its levels compact; meanwhile read-only handles open, each must see
/// exactly such a state and keep seeing it, and `verify` must pass. No timing is assumed:
/// the checks hold at whatever point each open lands.
#[test]
fn a_running_writer_is_read_as_a_consistent_prefix() {
    const KEYS: u32 = 400;
    for design in Options::available_presets() {
        let mem = MemFs::new();
        let env = Env::new(Arc::new(mem.clone()));
        let mut o = opts(&env, design);
        // A commit every few thousand writes: most opens overlap none, some overlap one
        // and start again.
        o.write_buffer_size = 256 * 1024;
        let writer = Arc::new(Db::open(DIR, o.clone()).unwrap());
        let mut model = BTreeMap::new();
        put_all(&writer, &mut model, 0..KEYS, 0);
        let stop = Arc::new(AtomicBool::new(false));
        let w = {
            let writer = Arc::clone(&writer);
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut round = 1;
                while !stop.load(Ordering::Relaxed) && round < 200 {
                    for i in 0..KEYS {
                        writer.put(&key(i), &value(i, round)).unwrap();
                    }
                    round += 1;
                }
                round
            })
        };
        let mut opened = 0;
        for _ in 0..25 {
            let db = match Db::open_read_only(DIR, o.clone()) {
                Ok(db) => db,
                Err(e) => {
                    // Allowed, if it says why: the store kept changing through every attempt.
                    assert!(
                        e.to_string().contains("changed while it was being read"),
                        "{design}: {e}"
                    );
                    continue;
                }
            };
            opened += 1;
            let state = scan(&db);
            prefix_rounds(&state, KEYS, design);
            // The view does not move while the writer goes on.
            for i in (0..KEYS).step_by(37) {
                assert_eq!(
                    db.get(&key(i)).unwrap(),
                    state.get(&key(i)).cloned(),
                    "{design}"
                );
            }
            assert_eq!(scan(&db), state, "{design}: the view moved");
            let r = shale::verify(DIR, o.clone());
            assert!(
                r.is_ok(),
                "{design}: verify beside a running writer: {:?}",
                r.err()
            );
        }
        stop.store(true, Ordering::Relaxed);
        let rounds = w.join().unwrap();
        assert!(opened > 0, "{design}: no read-only open succeeded");
        assert!(rounds > 1, "{design}");
        Arc::try_unwrap(writer).unwrap().close().unwrap();
    }
}

/// The round of each key in `state` (which holds every key of `0..keys`) forms a prefix of
/// the writer's history: rounds are non-increasing in key order and span at most two
/// consecutive rounds.
fn prefix_rounds(state: &BTreeMap<Vec<u8>, Vec<u8>>, keys: u32, design: &str) {
    assert_eq!(state.len(), keys as usize, "{design}: keys missing");
    let mut rounds = Vec::new();
    for i in 0..keys {
        let v = state.get(&key(i)).unwrap();
        let r = (0..200)
            .find(|&r| *v == value(i, r))
            .unwrap_or_else(|| panic!("{design}: key {i} holds a value never written: {v:?}"));
        rounds.push(r);
    }
    let newest = rounds[0];
    assert!(
        rounds.windows(2).all(|w| w[0] >= w[1]) && rounds.iter().all(|&r| r + 1 >= newest),
        "{design}: not a prefix of the history: {rounds:?}"
    );
}
