//! Issue 17, case 6: tables carry their own identity. A table file replaced by another valid
//! table (of the same store, or of another store) used to answer reads with the other
//! file's data; now open or the first read that reaches it fails with `Error::Corruption`
//! naming the file. Every case runs for every design preset.

#![expect(clippy::unwrap_used, reason = "test setup failures fail the test")]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use shale::env::mem::MemFs;
use shale::env::{Env, FileSystem, ReadCause};
use shale::{Db, Error, IterOptions, Options};

const DIR: &str = "/db";

fn opts(env: &Env, design: &str) -> Options {
    let mut o = Options::preset(design).unwrap().with_env(env.clone());
    // Values stay in the tree (wisckey too), and no compaction runs: each flush is one
    // level-0 table.
    o.min_separated_value_size = 1 << 20;
    o.vlog_gc = false;
    o.level0_compaction_trigger = 100;
    o.level0_slowdown_trigger = 200;
    o.level0_stop_trigger = 300;
    // The two tables must have the same size: without filters, an lsm-trie table does
    // not carry copies of the filters of the table below it (its filter cluster), which
    // would make the second flush larger. Identity is checked the same either way.
    if o.layout == shale::LayoutKind::Trie {
        o.table.bloom_bits_per_key = 0;
    }
    o
}

/// Two flushes of 50 keys each, alike in every length (keys, values, sequence numbers
/// below 128, one data block), so the two tables have the same size and a copy of one over
/// the other passes the size check the MANIFEST's record allows. Returns the two tables'
/// paths (first flush, second flush) and a key of each.
/// Two tables' paths, each with a key it holds.
type TwoTables = [(PathBuf, Vec<u8>); 2];

fn two_tables_of_one_size(env: &Env, design: &str) -> TwoTables {
    let db = Db::open(DIR, opts(env, design)).unwrap();
    for prefix in ["a", "b"] {
        for i in 0..50 {
            db.put(format!("{prefix}{i:04}").as_bytes(), b"0123456789")
                .unwrap();
        }
        db.flush().unwrap();
    }
    let mut files = db.live_files();
    db.close().unwrap();
    files.sort_by_key(|f| f.number);
    assert_eq!(files.len(), 2, "{design}: {files:?}");
    assert_eq!(files[0].size, files[1].size, "{design}: {files:?}");
    let path = |n: u64| Path::new(DIR).join(format!("{n:06}.sst"));
    [
        (path(files[0].number), b"a0007".to_vec()),
        (path(files[1].number), b"b0007".to_vec()),
    ]
}

fn copy(from: &MemFs, src: &Path, to: &MemFs, dst: &Path) {
    let env = Env::new(Arc::new(from.clone()));
    let bytes = env.read_all(src, ReadCause::Other).unwrap();
    let mut f = to.create(dst).unwrap();
    f.append(&bytes).unwrap();
    f.sync().unwrap();
    to.sync_dir(Path::new(DIR)).unwrap();
}

fn corruption_at(e: &Error) -> PathBuf {
    match e {
        Error::Corruption { file, .. } => file.clone(),
        other => panic!("expected Error::Corruption, got: {other}"),
    }
}

/// Open fails naming `bad`, or it succeeds and a `get` of `key` (in `bad`) and a full scan
/// each fail naming `bad`; the `get` of `good_key` (another table) still answers.
fn refused_naming(env: &Env, design: &str, bad: &Path, key: &[u8], good_key: &[u8], what: &str) {
    let db = match Db::open(DIR, opts(env, design)) {
        Err(e) => {
            assert_eq!(corruption_at(&e), bad, "{design} {what}: open: {e}");
            return;
        }
        Ok(db) => db,
    };
    let e = db.get(key).unwrap_err();
    assert_eq!(corruption_at(&e), bad, "{design} {what}: get: {e}");
    assert!(
        e.to_string().contains("table"),
        "{design} {what}: the message says why: {e}"
    );
    if db.supports_scans() {
        let e = match db.iter(IterOptions::default()) {
            Err(e) => e,
            Ok(mut it) => it.find_map(Result::err).unwrap(),
        };
        assert_eq!(corruption_at(&e), bad, "{design} {what}: scan: {e}");
    }
    match db.get(good_key) {
        Ok(v) => assert_eq!(v.as_deref(), Some(&b"0123456789"[..]), "{design} {what}"),
        // The trie's tables have no key ranges: both tables sit in the root container, on
        // every key's path, and without filters (see `opts`) nothing lets a get skip the
        // newer, bad one. Failing there, naming it, is right: it might hold a newer version.
        Err(e) if design == "lsm-trie" => {
            assert_eq!(corruption_at(&e), bad, "{design} {what}: good key: {e}")
        }
        Err(e) => panic!("{design} {what}: the good key's get failed: {e}"),
    }
    db.close().unwrap();
}

/// One table of a store copied over another live table of the same store (same size, so
/// only the recorded file number tells them apart): reads of the overwritten table fail
/// naming it, in both directions; `verify` fails naming it too.
#[test]
fn a_table_copied_over_another_table_of_the_store_is_corruption() {
    for design in Options::available_presets() {
        for (from, to) in [(0, 1), (1, 0)] {
            let mem = MemFs::new();
            let env = Env::new(Arc::new(mem.clone()));
            let tables = two_tables_of_one_size(&env, design);
            let (src, dst) = (&tables[from].0, &tables[to].0);
            copy(&mem, src, &mem, dst);
            let e = shale::verify(DIR, opts(&env, design)).unwrap_err();
            assert_eq!(corruption_at(&e), *dst, "{design}: verify: {e}");
            refused_naming(
                &env,
                design,
                dst,
                &tables[to].1,
                &tables[from].1,
                "same store",
            );
        }
    }
}

/// A table of another store, with the same number and the same size, copied in: reads of
/// it fail naming it (the store ids differ).
#[test]
fn a_table_of_another_store_is_corruption() {
    for design in Options::available_presets() {
        let size = |m: &MemFs, p: &Path| m.file_size(p).unwrap();
        // Store ids are random and varint-coded: build stores until two have tables of one
        // size (their ids' encodings as long), so only the id differs. Any two will do, so
        // a store whose id has a rare encoding length cannot leave the search empty (a
        // search for a match of one given store failed now and then, about one run in 50).
        let mut built: Vec<(MemFs, TwoTables)> = Vec::new();
        let (i, j) = (0..64)
            .find_map(|_| {
                let m = MemFs::new();
                let t = two_tables_of_one_size(&Env::new(Arc::new(m.clone())), design);
                let twin = built
                    .iter()
                    .position(|(bm, bt)| size(bm, &bt[1].0) == size(&m, &t[1].0));
                built.push((m, t));
                twin.map(|i| (i, built.len() - 1))
            })
            .expect("two stores with tables of one size");
        let (mem, ours) = built[i].clone();
        let (other, theirs) = built[j].clone();
        let env = Env::new(Arc::new(mem.clone()));
        assert_eq!(theirs[1].0, ours[1].0, "{design}: same file number");
        copy(&other, &theirs[1].0, &mem, &ours[1].0);
        refused_naming(
            &env,
            design,
            &ours[1].0,
            &ours[1].1,
            &ours[0].1,
            "other store",
        );
    }
}

/// Tables keep their identity through a reopen and a compaction: a healthy store reads
/// back everything (the check never refuses a store's own tables).
#[test]
fn a_healthy_store_reads_its_own_tables() {
    for design in Options::available_presets() {
        let mem = MemFs::new();
        let env = Env::new(Arc::new(mem.clone()));
        let tables = two_tables_of_one_size(&env, design);
        let db = Db::open(DIR, opts(&env, design)).unwrap();
        for (_, k) in &tables {
            assert_eq!(db.get(k).unwrap().as_deref(), Some(&b"0123456789"[..]));
        }
        db.compact_range(None, None).unwrap();
        if db.supports_scans() {
            assert_eq!(db.iter(IterOptions::default()).unwrap().count(), 100);
        }
        for (_, k) in &tables {
            assert_eq!(db.get(k).unwrap().as_deref(), Some(&b"0123456789"[..]));
        }
        db.close().unwrap();
        shale::verify(DIR, opts(&env, design)).unwrap();
    }
}

/// The obsolete-file sweep deletes only the store's own leftovers: a complete table of
/// another store copied in under a number this store does not list (named as its own
/// number, as that store wrote it) is left alone and never read, through opens, flushes
/// and compactions, and reported (`Stats::foreign_tables`, `VerifyReport::foreign_tables`);
/// a table of this store that no version lists (an old table put back) and a table file cut
/// short (crash debris) are deleted.
#[test]
fn the_sweep_leaves_another_stores_unlisted_table_alone() {
    for design in Options::available_presets() {
        let mem = MemFs::new();
        let env = Env::new(Arc::new(mem.clone()));
        let ours = two_tables_of_one_size(&env, design);
        let own_old = env.read_all(&ours[0].0, ReadCause::Other).unwrap();
        let other = MemFs::new();
        let theirs = two_tables_of_one_size(&Env::new(Arc::new(other.clone())), design);
        // Compacting moves our data out of both tables: their numbers become unlisted.
        let db = Db::open(DIR, opts(&env, design)).unwrap();
        db.compact_range(None, None).unwrap();
        let live: Vec<u64> = db.live_files().iter().map(|f| f.number).collect();
        db.close().unwrap();
        assert!(!live.contains(&900), "{design}: {live:?}");
        assert!(!mem.file_names().contains(&ours[1].0), "{design}: swept");
        let debris = Path::new(DIR).join("000900.sst");
        copy(&other, &theirs[1].0, &mem, &ours[1].0);
        let foreign = env.read_all(&ours[1].0, ReadCause::Other).unwrap();
        write_file(&mem, &ours[0].0, &own_old);
        write_file(&mem, &debris, &own_old[..own_old.len() / 2]);
        let listed = |found: &[shale::ForeignTable]| -> Vec<PathBuf> {
            found.iter().map(|t| t.file.clone()).collect()
        };
        for round in 0..2 {
            let report = shale::verify(DIR, opts(&env, design)).unwrap();
            assert_eq!(
                listed(&report.foreign_tables),
                [ours[1].0.clone()],
                "{design}: verify names the other store's table"
            );
            let db = Db::open(DIR, opts(&env, design)).unwrap();
            assert_eq!(
                listed(&db.stats().foreign_tables),
                [ours[1].0.clone()],
                "{design}: the sweep reports what it left alone"
            );
            for (_, k) in &ours {
                assert_eq!(db.get(k).unwrap().as_deref(), Some(&b"0123456789"[..]));
            }
            db.put(format!("round{round}").as_bytes(), b"x").unwrap();
            db.flush().unwrap();
            db.compact_range(None, None).unwrap();
            for r in 0..=round {
                let k = format!("round{r}");
                assert_eq!(db.get(k.as_bytes()).unwrap().as_deref(), Some(&b"x"[..]));
            }
            if db.supports_scans() {
                assert_eq!(
                    db.iter(IterOptions::default()).unwrap().count(),
                    101 + round
                );
            }
            db.close().unwrap();
            let names = mem.file_names();
            assert!(!names.contains(&ours[0].0), "{design}: our own old table");
            assert!(!names.contains(&debris), "{design}: debris");
            assert_eq!(
                env.read_all(&ours[1].0, ReadCause::Other).unwrap(),
                foreign,
                "{design}: the other store's table is untouched"
            );
        }
    }
}

/// The store's files with extension `ext`, sorted.
fn files_named(mem: &MemFs, ext: &str) -> Vec<PathBuf> {
    let mut s: Vec<PathBuf> = mem
        .file_names()
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    s.sort();
    s
}

/// `rounds` rounds of the same 100 keys, each flushed, in a new store in `mem`: round `r`
/// writes values of `b'a' + r`.
fn fill_rounds(mem: &MemFs, opts: &dyn Fn(&Env) -> Options, rounds: u8) {
    let env = Env::new(Arc::new(mem.clone()));
    let db = Db::open(DIR, opts(&env)).unwrap();
    for round in 0..rounds {
        for i in 0..100 {
            db.put(format!("k{i:04}").as_bytes(), &[b'a' + round; 100])
                .unwrap();
        }
        db.flush().unwrap();
    }
    db.close().unwrap();
}

fn write_file(mem: &MemFs, path: &Path, bytes: &[u8]) {
    let mut f = mem.create(path).unwrap();
    f.append(bytes).unwrap();
    f.sync().unwrap();
    mem.sync_dir(Path::new(DIR)).unwrap();
}

/// A value-log segment of another store copied over one of the store's own (the same
/// writes, so the same bytes but for the header's checksum, which covers the store id):
/// open and `verify` fail naming the segment; the store's own segments open.
#[test]
fn a_value_log_segment_of_another_store_is_corruption() {
    let vlog_opts = |env: &Env| {
        let mut o = Options::preset("wisckey").unwrap().with_env(env.clone());
        o.min_separated_value_size = 0;
        o.vlog_gc = false;
        o
    };
    let fill = |mem: &MemFs| {
        let env = Env::new(Arc::new(mem.clone()));
        let db = Db::open(DIR, vlog_opts(&env)).unwrap();
        for i in 0..100 {
            db.put(format!("k{i:04}").as_bytes(), &[b'v'; 100]).unwrap();
        }
        db.close().unwrap();
    };
    let segments = |mem: &MemFs| -> Vec<PathBuf> {
        let mut s: Vec<PathBuf> = mem
            .file_names()
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "vlog"))
            .collect();
        s.sort();
        s
    };
    let (ours, theirs) = (MemFs::new(), MemFs::new());
    fill(&ours);
    fill(&theirs);
    let env = Env::new(Arc::new(ours.clone()));
    let (mine, other) = (segments(&ours), segments(&theirs));
    assert_eq!(mine, other, "the same segment numbers");
    let seg = mine
        .iter()
        .find(|p| ours.file_size(p).unwrap() > 1000)
        .unwrap()
        .clone();
    assert_eq!(
        ours.file_size(&seg).unwrap(),
        theirs.file_size(&seg).unwrap()
    );
    // The store reads its own segment.
    shale::verify(DIR, vlog_opts(&env)).unwrap();
    copy(&theirs, &seg, &ours, &seg);
    let e = shale::verify(DIR, vlog_opts(&env)).unwrap_err();
    assert_eq!(corruption_at(&e), seg, "verify: {e}");
    assert!(e.to_string().contains("another store"), "{e}");
    let e = Db::open(DIR, vlog_opts(&env)).unwrap_err();
    assert_eq!(corruption_at(&e), seg, "open: {e}");
}

/// A value-log segment of another store copied in under a number this store's garbage
/// collection dropped (so the sweep would delete that number as its own leftover) is left
/// alone, through opens and closes; a file under a dropped number holding only zeros (crash
/// debris, no record) is deleted.
#[test]
fn the_sweep_leaves_another_stores_segment_alone() {
    let vlog_opts = |env: &Env| {
        let mut o = Options::preset("wisckey").unwrap().with_env(env.clone());
        o.min_separated_value_size = 0;
        o.vlog_segment_size = 4096;
        o.vlog_gc = false;
        o
    };
    let segments = |mem: &MemFs| files_named(mem, "vlog");
    // Both stores take the same writes, so their segments have the same numbers.
    let (ours, theirs) = (MemFs::new(), MemFs::new());
    fill_rounds(&ours, &vlog_opts, 2);
    fill_rounds(&theirs, &vlog_opts, 2);
    let env = Env::new(Arc::new(ours.clone()));
    let before = segments(&ours);
    let db = Db::open(DIR, vlog_opts(&env)).unwrap();
    while db.run_value_gc().unwrap() > 0 {}
    db.close().unwrap();
    let after = segments(&ours);
    let gone: Vec<&PathBuf> = before.iter().filter(|p| !after.contains(p)).collect();
    assert!(
        gone.len() >= 2,
        "garbage collection dropped segments: {gone:?}"
    );
    let (foreign, debris) = (gone[0].clone(), gone[1].clone());
    assert!(segments(&theirs).contains(&foreign));
    copy(&theirs, &foreign, &ours, &foreign);
    let bytes = env.read_all(&foreign, ReadCause::Other).unwrap();
    write_file(&ours, &debris, &[0u8; 64]);
    for _ in 0..2 {
        let db = Db::open(DIR, vlog_opts(&env)).unwrap();
        for i in 0..100 {
            assert_eq!(
                db.get(format!("k{i:04}").as_bytes()).unwrap().as_deref(),
                Some(&[b'b'; 100][..])
            );
        }
        db.close().unwrap();
        shale::verify(DIR, vlog_opts(&env)).unwrap();
        assert_eq!(
            env.read_all(&foreign, ReadCause::Other).unwrap(),
            bytes,
            "the other store's segment is untouched"
        );
        assert!(!ours.file_names().contains(&debris), "debris is swept");
    }
}

/// A WAL of another store copied in under a number this store has retired: the sweep deletes
/// a retired log only when its header names this store (or it has none: crash debris, or a
/// log written before store ids), so the other store's log is left alone and never read.
#[test]
fn the_sweep_leaves_another_stores_retired_log_alone() {
    let logs = |mem: &MemFs| files_named(mem, "log");
    // The same writes in both stores, so their files have the same numbers; ours goes on
    // for another round and so retires the log the other store still has.
    let leveldb = |env: &Env| opts(env, "leveldb");
    let (ours, theirs) = (MemFs::new(), MemFs::new());
    fill_rounds(&theirs, &leveldb, 2);
    fill_rounds(&ours, &leveldb, 3);
    let foreign = logs(&theirs)
        .into_iter()
        .find(|p| !logs(&ours).contains(p))
        .expect("the other store keeps a log this one retired");
    copy(&theirs, &foreign, &ours, &foreign);
    let env = Env::new(Arc::new(ours.clone()));
    let bytes = env.read_all(&foreign, ReadCause::Other).unwrap();
    for _ in 0..2 {
        let db = Db::open(DIR, opts(&env, "leveldb")).unwrap();
        for i in 0..100 {
            assert_eq!(
                db.get(format!("k{i:04}").as_bytes()).unwrap().as_deref(),
                Some(&[b'c'; 100][..]),
                "the other store's log is not replayed"
            );
        }
        db.close().unwrap();
        shale::verify(DIR, opts(&env, "leveldb")).unwrap();
        assert_eq!(
            env.read_all(&foreign, ReadCause::Other).unwrap(),
            bytes,
            "the other store's log is untouched"
        );
    }
}
