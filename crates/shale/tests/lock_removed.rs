//! Issue 17, case 7: the store's lock holds when its `LOCK` file is removed.
//!
//! On the real file system: a store is open, `LOCK` is deleted, and a second process (this
//! test binary started again, running only [`child_opens_the_store`]) and a second handle
//! in this process both get `Error::Locked`, while every file of the first store stays and
//! the first store keeps working. A second handle in this process is an equivalent test
//! of the same thing: `flock` locks belong to open file descriptions, so a second `open`
//! of the directory or of `LOCK` conflicts with the first exactly as another process's
//! would; the child process makes it literal.

#![cfg(unix)]
#![expect(clippy::unwrap_used, reason = "test setup failures fail the test")]

use std::collections::{BTreeMap, BTreeSet};

mod store_common;
use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::process::Command;
use store_common::{key, put_round, scan, value};

use shale::{Db, Error, Options};

/// The tests of this file run one at a time. One starts a child process; between its
/// `fork` and `exec` the child holds a copy of every descriptor of this process, and so the
/// `flock`s of the stores other tests have open: a test that closes its store and reopens it
/// in that window finds its own directory still locked (`Error::Locked`).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

const CHILD_DIR: &str = "SHALE_LOCK_TEST_CHILD_DIR";
const CHILD_DESIGN: &str = "SHALE_LOCK_TEST_CHILD_DESIGN";

fn opts(design: &str) -> Options {
    let mut o = Options::preset(design).unwrap();
    o.write_buffer_size = 16 * 1024;
    o.target_file_size = 8 * 1024;
    o.min_separated_value_size = 24;
    o.vlog_segment_size = 16 * 1024;
    o.vlog_gc = false;
    // No background compaction: once a flush returns the directory stays as it is, so the
    // test can compare its listings. Each memtable flushed alone: after merged flushes (the
    // tuned presets') the trie layout starts compactions of its own, which change it.
    o.level0_compaction_trigger = 1000;
    o.level0_slowdown_trigger = 2000;
    o.level0_stop_trigger = 3000;
    o.min_memtables_to_merge = 1;
    o
}

struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("shale-lock-removed-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn names(dir: &Path) -> BTreeSet<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// A store in `dir` holding two flushed rounds of writes, and its model; no background work
/// runs once this returns.
fn open_with_tables(dir: &Path, design: &str) -> (Db, BTreeMap<Vec<u8>, Vec<u8>>) {
    let db = Db::open(dir, opts(design)).unwrap();
    let mut model = BTreeMap::new();
    put_round(&db, &mut model, 0..1500, 0);
    db.flush().unwrap();
    put_round(&db, &mut model, 0..1500, 1);
    db.flush().unwrap();
    // The level-0 triggers above keep the leveled layouts still, but LSM-trie compacts a
    // container whose pile reaches `trie.max_sub_levels` tables: let that finish (and its
    // inputs be deleted) before the caller lists the directory.
    db.wait_for_compactions().unwrap();
    (db, model)
}

/// Open the store in a second process: what it got, as one line.
fn open_in_child(dir: &Path, design: &str) -> String {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "child_opens_the_store",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env(CHILD_DIR, dir)
        .env(CHILD_DESIGN, design)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "child failed: {stdout}");
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("child-result: "))
        .unwrap_or_else(|| panic!("no result from the child: {stdout}"))
        .to_string()
}

/// The second process: opens the store named by the environment and says what happened.
/// Does nothing when run on its own.
#[test]
#[ignore = "run as a child process by the tests of this file"]
fn child_opens_the_store() {
    let (Some(dir), Ok(design)) = (std::env::var_os(CHILD_DIR), std::env::var(CHILD_DESIGN)) else {
        return;
    };
    match Db::open(&dir, opts(&design)) {
        Err(Error::Locked { path }) => println!("child-result: locked {}", path.display()),
        Err(e) => println!("child-result: error {e}"),
        Ok(db) => {
            println!("child-result: opened");
            drop(db);
        }
    }
}

#[test]
fn a_removed_lock_file_keeps_a_second_opener_out() {
    let _serial = serial();
    for design in Options::available_presets() {
        let tmp = TempDir::new(design);
        let dir = tmp.0.as_path();
        let (db, mut model) = open_with_tables(dir, design);
        let before = names(dir);
        assert!(before.iter().any(|n| n.ends_with(".sst")), "{before:?}");

        fs::remove_file(dir.join("LOCK")).unwrap();
        let child = open_in_child(dir, design);
        assert!(
            child.starts_with("locked") && child.ends_with("LOCK"),
            "{design}: the second process got: {child}"
        );
        match Db::open(dir, opts(design)) {
            Err(Error::Locked { path }) => assert_eq!(path, dir.join("LOCK")),
            other => panic!("{design}: expected Locked, got {:?}", other.err()),
        }
        // Nothing of the first store was deleted or added by the refused openers (they
        // stopped at the directory's lock, before creating a LOCK file).
        assert_eq!(
            names(dir),
            before.iter().filter(|n| *n != "LOCK").cloned().collect(),
            "{design}"
        );

        // The first store goes on: its sweeps lock a new LOCK file (the directory lock
        // proves nobody else got in) and delete what its compactions made obsolete.
        put_round(&db, &mut model, 0..1500, 2);
        db.compact_range(None, None).unwrap();
        assert!(dir.join("LOCK").exists(), "{design}");
        db.put(b"after", b"compaction").unwrap();
        model.insert(b"after".to_vec(), b"compaction".to_vec());
        assert_eq!(scan(&db), model, "{design}");
        assert!(
            matches!(Db::open(dir, opts(design)), Err(Error::Locked { .. })),
            "{design}"
        );
        db.close().unwrap();
        let db = Db::open(dir, opts(design)).unwrap();
        assert_eq!(scan(&db), model, "{design}");
        db.close().unwrap();
    }
}

/// Remove `LOCK` and lock a new one, as a process that locks only the `LOCK` file (versions
/// before the directory lock) would after finding it gone; the lock holds while the file
/// returned is open.
fn steal_lock(dir: &Path) -> File {
    fs::remove_file(dir.join("LOCK")).unwrap();
    let intruder: File = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(dir.join("LOCK"))
        .unwrap();
    intruder.try_lock().unwrap();
    intruder
}

/// A process that locks only the `LOCK` file (as versions before the directory lock do)
/// got in after `LOCK` was removed: the first store notices at its next sweep, deletes
/// nothing, and turns read-only with the reason.
#[test]
fn a_store_whose_lock_file_another_process_holds_deletes_nothing() {
    let _serial = serial();
    for design in Options::available_presets() {
        let tmp = TempDir::new(&format!("{design}-intruder"));
        let dir = tmp.0.as_path();
        let (db, mut model) = open_with_tables(dir, design);

        let intruder = steal_lock(dir);
        let before = names(dir);

        // Flushes and a compaction make files obsolete; the first sweep after them must
        // stop the store instead of deleting. Writes until then are acknowledged (and must
        // survive), the ones after are refused.
        let mut refused = None;
        for i in 0..1500u32 {
            match db.put(&key(i), &value(i, 2)) {
                Ok(()) => {
                    model.insert(key(i), value(i, 2));
                }
                Err(e) => {
                    refused = Some(e);
                    break;
                }
            }
        }
        if refused.is_none() {
            let _ = db.compact_range(None, None);
        }
        let now = names(dir);
        assert!(
            before.is_subset(&now),
            "{design}: deleted {:?}",
            before.difference(&now).collect::<Vec<_>>()
        );
        let e = refused.unwrap_or_else(|| db.put(b"k", b"v").unwrap_err());
        assert!(matches!(e, Error::ReadOnly(_)), "{design}: {e}");
        assert!(e.to_string().contains("LOCK"), "{design}: {e}");

        drop(intruder);
        let _ = db.close();
        let db = Db::open(dir, opts(design)).unwrap();
        assert_eq!(scan(&db), model, "{design}");
        db.close().unwrap();
    }
}

/// The same intruder, noticed only at `close` (no flush or compaction ran a sweep before):
/// the close writes no MANIFEST edit, reports the lost lock, and every acknowledged write is
/// recovered from the log once the intruder is gone.
#[test]
fn a_store_that_lost_its_lock_writes_no_manifest_at_close() {
    let _serial = serial();
    for design in Options::available_presets() {
        let tmp = TempDir::new(&format!("{design}-close"));
        let dir = tmp.0.as_path();
        let (db, mut model) = open_with_tables(dir, design);
        // Writes the close would record (its counters) without a flush.
        put_round(&db, &mut model, 0..20, 3);

        let intruder = steal_lock(dir);
        let manifests = |dir: &Path| -> BTreeMap<String, u64> {
            names(dir)
                .into_iter()
                .filter(|n| n.starts_with("MANIFEST-"))
                .map(|n| {
                    let len = fs::metadata(dir.join(&n)).unwrap().len();
                    (n, len)
                })
                .collect()
        };
        let before = manifests(dir);
        let e = db.close().unwrap_err();
        assert!(matches!(e, Error::ReadOnly(_)), "{design}: {e}");
        assert!(e.to_string().contains("LOCK"), "{design}: {e}");
        assert_eq!(
            manifests(dir),
            before,
            "{design}: the close wrote a MANIFEST edit"
        );

        drop(intruder);
        let db = Db::open(dir, opts(design)).unwrap();
        assert_eq!(scan(&db), model, "{design}");
        db.close().unwrap();
    }
}
