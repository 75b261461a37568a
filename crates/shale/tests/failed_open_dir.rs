//! A failed open leaves nothing it made: the store directory (and its parents) when the
//! open created them, and no file in it; a directory that existed before stays, with what
//! it held.

#![expect(clippy::unwrap_used, reason = "test setup failures fail the test")]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use shale::env::fault::{FailMode, FaultFs};
use shale::env::mem::MemFs;
use shale::env::posix::PosixFs;
use shale::env::{Env, FileLock, FileSystem, RandomAccessFile, WritableFile};
use shale::options::PRESETS;
use shale::{Db, Options};

fn opts(env: &Env, design: &str) -> Options {
    let mut o = Options::preset(design).unwrap().with_env(env.clone());
    o.create_if_missing = true;
    o
}

/// The number of mutating operations a successful open of a new store at `dir` makes
/// (up to its return; background threads may add more).
fn ops_of_open(design: &str, dir: &Path) -> u64 {
    let fs = FaultFs::new(MemFs::new());
    let ctl = fs.control();
    let env = Env::new(Arc::new(fs));
    let db = Db::open(dir, opts(&env, design)).unwrap();
    let n = ctl.ops();
    db.close().unwrap();
    n
}

/// Every mutating operation of an open that creates `/a/b/db` fails in turn, once: each
/// failed open leaves no `/a` (the directories it created are gone with every file in them).
#[test]
fn an_io_error_after_creating_the_directory_removes_it() {
    let dir = Path::new("/a/b/db");
    for design in PRESETS {
        let total = ops_of_open(design, dir);
        let mut failed = 0;
        // Op 0 creates the directories; failing it creates nothing.
        for k in 1..total {
            let fs = FaultFs::new(MemFs::new());
            let ctl = fs.control();
            let env = Env::new(Arc::new(fs));
            ctl.fail_at(k, FailMode::Once);
            match Db::open(dir, opts(&env, design)) {
                Ok(db) => drop(db),
                Err(e) => {
                    failed += 1;
                    assert!(
                        !env.fs().exists(Path::new("/a")).unwrap(),
                        "{design}: op {k} ({:?}) failed the open ({e}) and /a is left: {:?}",
                        ctl.injected(),
                        env.fs().list_dir(dir).ok()
                    );
                }
            }
        }
        assert!(failed > 0, "{design}: no injected fault failed the open");
    }
}

/// A directory that existed before a failed open stays, with the file it held; only the
/// directory the open created under it goes.
#[test]
fn a_failed_open_keeps_a_directory_that_existed() {
    for design in PRESETS {
        let total = ops_of_open(design, Path::new("/a/db"));
        for k in 1..total {
            let mem = MemFs::new();
            mem.create_dir_all(Path::new("/a")).unwrap();
            mem.create(Path::new("/a/notes.txt"))
                .unwrap()
                .append(b"mine")
                .unwrap();
            let fs = FaultFs::new(mem);
            let ctl = fs.control();
            let env = Env::new(Arc::new(fs));
            // The file's creation took no op of this file system: count from the open.
            ctl.fail_at(ctl.ops() + k, FailMode::Once);
            if Db::open("/a/db", opts(&env, design)).is_ok() {
                continue;
            }
            let fs = env.fs();
            assert_eq!(
                fs.list_dir(Path::new("/a")).unwrap(),
                vec!["notes.txt"],
                "{design} op {k}"
            );
        }
        // An existing empty store directory stays after a failed open, and empty.
        let fs = FaultFs::new(MemFs::new());
        let ctl = fs.control();
        let env = Env::new(Arc::new(fs));
        env.fs().create_dir_all(Path::new("/db")).unwrap();
        ctl.fail_when(
            Arc::new(|op| op.kind == shale::env::fault::OpKind::Rename),
            FailMode::Once,
        );
        assert!(Db::open("/db", opts(&env, design)).is_err());
        assert!(env.fs().exists(Path::new("/db")).unwrap());
        assert_eq!(
            env.fs().list_dir(Path::new("/db")).unwrap(),
            Vec::<String>::new()
        );
    }
}

/// Bad options are refused before anything is created (in memory and on disk).
#[test]
fn bad_options_create_nothing() {
    let env = Env::memory();
    let mut o = opts(&env, "leveldb");
    o.write_buffer_size = 0;
    assert!(Db::open("/a/db", o).is_err());
    assert!(!env.fs().exists(Path::new("/a")).unwrap());

    let tmp = TempDir::new("bad-options");
    let mut o = opts(&Env::posix(), "wisckey");
    o.write_buffer_size = 0;
    assert!(Db::open(tmp.0.join("new/db"), o).is_err());
    assert!(!tmp.0.join("new").exists());
}

/// On a real directory: an open whose CURRENT update fails removes the directories it
/// created; one whose directory existed keeps it (empty, as it was).
#[test]
fn a_failed_open_on_disk_removes_the_directory_it_created() {
    for design in PRESETS {
        let tmp = TempDir::new(design);
        let env = Env::new(Arc::new(FailRename::default()));
        let dir = tmp.0.join("new/db");
        let e = Db::open(&dir, opts(&env, design)).unwrap_err();
        assert!(e.to_string().contains("injected"), "{design}: {e}");
        assert!(
            !tmp.0.join("new").exists(),
            "{design}: {:?}",
            std::fs::read_dir(&dir)
        );
        assert!(tmp.0.exists());

        let env = Env::new(Arc::new(FailRename::default()));
        let dir = tmp.0.join("old");
        std::fs::create_dir(&dir).unwrap();
        assert!(Db::open(&dir, opts(&env, design)).is_err());
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "{design}");
        // Without the fault the directory takes a store.
        drop(Db::open(&dir, opts(&Env::posix(), design)).unwrap());
    }
}

/// A temporary directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("shale-failed-open-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The real file system, with its first rename (the CURRENT update of a new store) failing.
#[derive(Debug, Default)]
struct FailRename {
    inner: PosixFs,
    failed: AtomicBool,
}

impl FileSystem for FailRename {
    fn create(&self, path: &Path) -> shale::Result<Box<dyn WritableFile>> {
        self.inner.create(path)
    }
    fn open(&self, path: &Path) -> shale::Result<Arc<dyn RandomAccessFile>> {
        self.inner.open(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> shale::Result<()> {
        if !self.failed.swap(true, Ordering::SeqCst) {
            return Err(shale::Error::io(
                "rename",
                from,
                std::io::Error::other("injected"),
            ));
        }
        self.inner.rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> shale::Result<()> {
        self.inner.remove_file(path)
    }
    fn create_dir_all(&self, path: &Path) -> shale::Result<()> {
        self.inner.create_dir_all(path)
    }
    fn remove_dir(&self, path: &Path) -> shale::Result<()> {
        self.inner.remove_dir(path)
    }
    fn list_dir(&self, path: &Path) -> shale::Result<Vec<String>> {
        self.inner.list_dir(path)
    }
    fn sync_dir(&self, path: &Path) -> shale::Result<()> {
        self.inner.sync_dir(path)
    }
    fn exists(&self, path: &Path) -> shale::Result<bool> {
        self.inner.exists(path)
    }
    fn file_size(&self, path: &Path) -> shale::Result<u64> {
        self.inner.file_size(path)
    }
    fn lock(&self, path: &Path) -> shale::Result<Box<dyn FileLock>> {
        self.inner.lock(path)
    }
}
