//! `Db::checkpoint` (issue 18): a consistent copy of an open store, taken while writes
//! continue, that opens on its own; on the real file system (hard links), for every
//! combination of the axes (`Axes::all()`: leveldb, pebblesdb, wisckey and the others).
//!
//! Consistency is checked exactly: one writer thread applies operations `0, 1, 2, ...` in
//! order (operation `i` puts or deletes key `i % KEYS`, its value naming `i`), so a
//! consistent copy holds the effect of operations `0..c` for one cut `c`, no more and no
//! less, with `c` at least the operations finished before the checkpoint began and at most
//! those begun before it returned. A kill -9 during a checkpoint (a child process running
//! this binary) leaves the source store intact and the checkpoint either complete or
//! without `CURRENT`, which every open refuses.

#![cfg(unix)]
#![expect(clippy::unwrap_used, reason = "test setup failures fail the test")]

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use shale::env::posix::PosixFs;
use shale::env::{Env, FileLock, FileSystem, RandomAccessFile, WritableFile};
use shale::{Axes, Db, Error, IterOptions, Options};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Keys the writer cycles through.
const KEYS: u64 = 300;

const CHILD_DIR: &str = "SHALE_CHECKPOINT_TEST_CHILD_DIR";
const CHILD_DESIGN: &str = "SHALE_CHECKPOINT_TEST_CHILD_DESIGN";
const CHILD_STOP_AT: &str = "SHALE_CHECKPOINT_TEST_CHILD_STOP_AT";

/// Every combination of the axes, by name (`leveled+inline+skiplist+sst` is leveldb,
/// `flsm+inline+...` pebblesdb, `leveled+vlog+...` wisckey).
fn designs() -> Vec<String> {
    Axes::all().iter().map(Axes::name).collect()
}

/// Small sizes, so that a few thousand writes flush, compact, rotate value-log segments
/// and collect them while a checkpoint runs.
fn opts(design: &str) -> Options {
    let axes = Axes::all()
        .into_iter()
        .find(|a| a.name() == design)
        .unwrap();
    let mut o = Options::preset("leveldb").unwrap().with_axes(axes);
    o.write_buffer_size = 16 * 1024;
    o.target_file_size = 8 * 1024;
    o.max_bytes_for_level_base = 32 * 1024;
    o.level_size_multiplier = 4;
    o.min_separated_value_size = 16;
    o.vlog_segment_size = 8 * 1024;
    o.vlog_gc_ratio = 0.2;
    o.flsm.top_level_bits = 5;
    o.flsm.bit_decrement = 1;
    o.flsm.max_sstables_per_guard = 2;
    o
}

struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let name = name.replace('+', "-");
        let dir =
            std::env::temp_dir().join(format!("shale-checkpoint-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn key(k: u64) -> Vec<u8> {
    format!("key{k:05}").into_bytes()
}

/// The value operation `i` writes: names `i`, long enough to be separated.
fn value(i: u64) -> Vec<u8> {
    format!("op {i:010} padded well past the separation size").into_bytes()
}

/// The operation a value names.
fn op_of(value: &[u8]) -> u64 {
    let s = std::str::from_utf8(value).unwrap();
    s[3..13].parse().unwrap()
}

/// Operation `i` deletes its key (one in seven), else puts `value(i)`.
fn is_delete(i: u64) -> bool {
    i % 7 == 3
}

/// Apply operation `i` to `db`.
fn apply(db: &Db, i: u64) {
    let k = key(i % KEYS);
    if is_delete(i) {
        db.delete(&k).unwrap();
    } else {
        db.put(&k, &value(i)).unwrap();
    }
}

/// What operations `0..cut` leave.
fn model_at(cut: u64) -> Model {
    let mut m = Model::new();
    for i in 0..cut {
        let k = key(i % KEYS);
        if is_delete(i) {
            m.remove(&k);
        } else {
            m.insert(k, value(i));
        }
    }
    m
}

/// Everything the store holds: a scan, or for a store that answers point reads only
/// (`Db::supports_scans`), a get of every key of the key space.
fn scan(db: &Db) -> Model {
    if !db.supports_scans() {
        return (0..KEYS)
            .filter_map(|k| db.get(&key(k)).unwrap().map(|v| (key(k), v)))
            .collect();
    }
    db.iter(IterOptions::default())
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// The cuts a store's contents correspond to: every `c` whose state after operations
/// `0..c` they are (more than one when the operations after the newest visible value delete
/// keys already absent). Fails unless there is one.
fn cuts_of(contents: &Model, what: &str) -> std::ops::RangeInclusive<u64> {
    let first = contents
        .values()
        .map(|v| op_of(v))
        .max()
        .map_or(0, |n| n + 1);
    let mut model = model_at(first);
    let mut cuts = Vec::new();
    let mut c = first;
    loop {
        if model == *contents {
            cuts.push(c);
        }
        // Past `first` only deletes may follow: a put would be visible.
        if !is_delete(c) {
            break;
        }
        model.remove(&key(c % KEYS));
        c += 1;
    }
    assert!(
        !cuts.is_empty(),
        "{what}: the contents ({} keys) are not the state after any prefix of the operations \
         (the newest value written is operation {})",
        contents.len(),
        first.saturating_sub(1)
    );
    cuts[0]..=cuts[cuts.len() - 1]
}

/// Open the checkpoint in `dir` every way a user can, check it holds the state after
/// operations `0..cut` for one cut in `lo..=hi`, and return that cut.
fn check_checkpoint(dir: &Path, design: &str, lo: u64, hi: u64) -> u64 {
    let ro = Db::open_read_only(dir, opts(design)).unwrap();
    let contents = scan(&ro);
    drop(ro);
    let cuts = cuts_of(
        &contents,
        &format!("{design}: checkpoint {}", dir.display()),
    );
    let cut = (*cuts.start()).max(lo);
    assert!(
        cuts.contains(&cut) && cut <= hi,
        "{design}: the checkpoint holds operations 0..c for c in {cuts:?}, outside {lo}..={hi}"
    );
    shale::verify(dir, opts(design)).unwrap();
    // With the options it records, as `shale` opens it.
    let stored = shale::load_options(dir, Options::default()).unwrap();
    assert_eq!(stored.axes().name(), design);
    let db = Db::open(dir, stored).unwrap();
    assert_eq!(
        scan(&db),
        contents,
        "{design}: read-write open of the checkpoint"
    );
    db.close().unwrap();
    cut
}

#[test]
fn checkpoints_under_a_concurrent_writer_hold_a_prefix() {
    for design in designs() {
        let tmp = TempDir::new(&format!("prefix-{design}"));
        let src = tmp.0.join("db");
        let db = Arc::new(Db::open(&src, opts(&design)).unwrap());
        // Tables from the start, so that every checkpoint has some to link.
        const FIRST: u64 = 1000;
        for i in 0..FIRST {
            apply(&db, i);
        }
        db.flush().unwrap();
        let done = Arc::new(AtomicU64::new(FIRST));
        let stop = Arc::new(AtomicBool::new(false));
        let writer = {
            let (db, done, stop) = (Arc::clone(&db), Arc::clone(&done), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut i = FIRST;
                while !stop.load(Ordering::Acquire) || i < 3000 {
                    apply(&db, i);
                    i += 1;
                    done.store(i, Ordering::Release);
                }
            })
        };
        // Value-log collection side by side with the writer and the checkpoints.
        let gc = {
            let (db, stop) = (Arc::clone(&db), Arc::clone(&stop));
            let done = Arc::clone(&done);
            std::thread::spawn(move || {
                while !stop.load(Ordering::Acquire) {
                    db.run_value_gc().unwrap();
                    // Once per 100 operations: no spinning on a store without a value log.
                    let next = done.load(Ordering::Acquire) + 100;
                    while done.load(Ordering::Acquire) < next && !stop.load(Ordering::Acquire) {
                        std::thread::yield_now();
                    }
                }
            })
        };
        let mut taken = Vec::new();
        for n in 0..4 {
            // Let the writer get ahead between checkpoints (no sleep: wait for its count).
            let target = done.load(Ordering::Acquire) + 400;
            while done.load(Ordering::Acquire) < target {
                std::thread::yield_now();
            }
            let dir = tmp.0.join(format!("ckpt{n}"));
            let lo = done.load(Ordering::Acquire);
            let info = db.checkpoint(&dir).unwrap();
            // `done` lags the operation in flight by one.
            let hi = done.load(Ordering::Acquire) + 1;
            taken.push((dir, lo, hi, info));
        }
        stop.store(true, Ordering::Release);
        writer.join().unwrap();
        gc.join().unwrap();
        let total = done.load(Ordering::Acquire);
        let mut cuts = Vec::new();
        for (dir, lo, hi, info) in &taken {
            // Tables of a format that appends are copied (through their committed size).
            assert!(
                info.files_linked > 0 || design.ends_with("+dtable"),
                "{design}: tables are hard-linked on one file system: {info:?}"
            );
            let cut = check_checkpoint(dir, &design, *lo, *hi);
            // One sequence number per operation, plus (with a value log) one per value
            // collection rewrote: the copy holds exactly the writes through its sequence.
            if design.contains("+inline+") {
                assert_eq!(cut, info.sequence, "{design}: {info:?}");
            } else {
                assert!(cut <= info.sequence, "{design}: {cut} {info:?}");
            }
            cuts.push(cut);
            eprintln!(
                "{design}: cut {} in {lo}..={hi}: {info:?}",
                cuts[cuts.len() - 1]
            );
        }
        assert!(cuts.windows(2).all(|w| w[0] <= w[1]), "{design}: {cuts:?}");
        // The source is whole too.
        assert_eq!(scan(&db), model_at(total), "{design}: the source");
        Arc::into_inner(db).unwrap().close().unwrap();
        let db = Db::open(&src, opts(&design)).unwrap();
        assert_eq!(scan(&db), model_at(total), "{design}: the source reopened");
    }
}

#[test]
fn a_checkpoint_does_not_change_when_the_source_does() {
    for design in designs() {
        let tmp = TempDir::new(&format!("frozen-{design}"));
        let src = tmp.0.join("db");
        let ckpt = tmp.0.join("ckpt");
        let db = Db::open(&src, opts(&design)).unwrap();
        for i in 0..2500 {
            apply(&db, i);
        }
        db.checkpoint(&ckpt).unwrap();
        let before = model_at(2500);
        // Overwrite everything, compact, collect and delete: the source's files that the
        // checkpoint links are deleted or replaced in the source.
        for i in 2500..6000 {
            apply(&db, i);
        }
        db.compact_range(None, None).unwrap();
        while db.run_value_gc().unwrap() > 0 {}
        db.flush().unwrap();
        assert_eq!(scan(&db), model_at(6000));
        db.close().unwrap();
        assert_eq!(check_checkpoint(&ckpt, &design, 2500, 2500), 2500);
        // Writes into the checkpoint do not reach the source either (linked files are
        // never written in place).
        let c = Db::open(&ckpt, opts(&design)).unwrap();
        assert_eq!(scan(&c), before);
        for i in 6000..9000 {
            apply(&c, i);
        }
        c.compact_range(None, None).unwrap();
        c.close().unwrap();
        let db = Db::open(&src, opts(&design)).unwrap();
        assert_eq!(
            scan(&db),
            model_at(6000),
            "{design}: the source after the copy changed"
        );
    }
}

#[test]
fn a_checkpoint_refuses_an_existing_directory_and_a_read_only_handle() {
    let design = &designs()[0];
    let tmp = TempDir::new("refusals");
    let src = tmp.0.join("db");
    let db = Db::open(&src, opts(design)).unwrap();
    apply(&db, 0);
    let existing = tmp.0.join("existing");
    fs::create_dir_all(&existing).unwrap();
    let e = db.checkpoint(&existing).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("already exists")),
        "{e}"
    );
    assert_eq!(fs::read_dir(&existing).unwrap().count(), 0);
    let e = db.checkpoint(&src).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    db.close().unwrap();
    let ro = Db::open_read_only(&src, opts(design)).unwrap();
    let e = ro.checkpoint(tmp.0.join("from-ro")).unwrap_err();
    assert!(matches!(e, Error::ReadOnlyOpen { .. }), "{e}");
    assert!(!tmp.0.join("from-ro").exists());
}

/// The child's file system: the real one, except that one change of the checkpoint (a
/// file created or linked, a rename, a directory created or synced, in its directory or its
/// staging directory, or the sync of their parent) prints `stopped` and never returns, so
/// that the parent's kill -9 lands exactly there while the writer thread goes on. Which
/// change: the `n`-th (`stop_at` `"n"`), or the first of one kind on a path ending in one
/// name (`"rename:CURRENT"`; `PARENT` names the parent directory).
#[derive(Debug)]
struct StopFs {
    inner: PosixFs,
    ckpt: PathBuf,
    stop_at: String,
    changes: Arc<AtomicU64>,
}

impl StopFs {
    fn change(&self, op: &str, path: &Path) {
        let parent = self.ckpt.parent().unwrap();
        let watched = path == parent
            || path
                .to_string_lossy()
                .contains(&*self.ckpt.to_string_lossy());
        if !watched {
            return;
        }
        let n = self.changes.fetch_add(1, Ordering::SeqCst);
        let name = if path == parent {
            "PARENT".to_string()
        } else {
            path.file_name().unwrap().to_string_lossy().into_owned()
        };
        let stop = match self.stop_at.split_once(':') {
            Some((o, f)) => o == op && f == name,
            None => self.stop_at.parse::<u64>().ok() == Some(n),
        };
        if stop {
            println!("stopped at {op} {}", path.display());
            loop {
                std::thread::park();
            }
        }
    }
}

impl FileSystem for StopFs {
    fn create(&self, path: &Path) -> shale::Result<Box<dyn WritableFile>> {
        self.change("create", path);
        self.inner.create(path)
    }
    fn create_log(&self, path: &Path) -> shale::Result<Box<dyn WritableFile>> {
        self.inner.create_log(path)
    }
    fn reopen(&self, path: &Path, at: u64) -> shale::Result<Box<dyn WritableFile>> {
        self.inner.reopen(path, at)
    }
    fn open(&self, path: &Path) -> shale::Result<Arc<dyn RandomAccessFile>> {
        self.inner.open(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> shale::Result<()> {
        self.change("rename", to);
        self.inner.rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> shale::Result<()> {
        self.inner.remove_file(path)
    }
    fn create_dir_all(&self, path: &Path) -> shale::Result<()> {
        self.change("create_dir_all", path);
        self.inner.create_dir_all(path)
    }
    fn list_dir(&self, path: &Path) -> shale::Result<Vec<String>> {
        self.inner.list_dir(path)
    }
    fn sync_dir(&self, path: &Path) -> shale::Result<()> {
        self.change("sync_dir", path);
        self.inner.sync_dir(path)
    }
    fn exists(&self, path: &Path) -> shale::Result<bool> {
        self.inner.exists(path)
    }
    fn file_size(&self, path: &Path) -> shale::Result<u64> {
        self.inner.file_size(path)
    }
    fn hard_link(&self, from: &Path, to: &Path) -> shale::Result<()> {
        self.change("hard_link", to);
        self.inner.hard_link(from, to)
    }
    fn lock(&self, path: &Path) -> shale::Result<Box<dyn FileLock>> {
        self.inner.lock(path)
    }
}

/// The child process of [`a_kill_during_a_checkpoint_leaves_the_source_whole`]: opens the
/// store named by the environment, writes operations from where the store is on a thread,
/// and takes one checkpoint `ckpt` beside it through [`StopFs`]. Prints `done LO HI
/// CHANGES` if it was not stopped, then waits to be killed.
#[test]
#[ignore = "run as a child process by the tests of this file"]
fn child_checkpoints_until_killed() {
    let (Some(dir), Ok(design), Ok(stop_at)) = (
        std::env::var_os(CHILD_DIR),
        std::env::var(CHILD_DESIGN),
        std::env::var(CHILD_STOP_AT),
    ) else {
        return;
    };
    let dir = PathBuf::from(dir);
    let ckpt = dir.join("ckpt");
    let changes = Arc::new(AtomicU64::new(0));
    let fs = StopFs {
        inner: PosixFs::new(),
        ckpt: ckpt.clone(),
        stop_at,
        changes: Arc::clone(&changes),
    };
    let o = opts(&design).with_env(Env::new(Arc::new(fs)));
    let db = Arc::new(Db::open(dir.join("db"), o).unwrap());
    let first = *cuts_of(&scan(&db), "the child's store").end();
    let done = Arc::new(AtomicU64::new(first));
    {
        let (db, done) = (Arc::clone(&db), Arc::clone(&done));
        std::thread::spawn(move || {
            let mut i = first;
            loop {
                apply(&db, i);
                i += 1;
                done.store(i, Ordering::Release);
            }
        });
    }
    let target = first + 300;
    while done.load(Ordering::Acquire) < target {
        std::thread::yield_now();
    }
    let lo = done.load(Ordering::Acquire);
    db.checkpoint(&ckpt).unwrap();
    let hi = done.load(Ordering::Acquire) + 1;
    // The changes this checkpoint made, as the file system counted them.
    let changes = changes.load(Ordering::SeqCst);
    println!("done {lo} {hi} {changes}");
    loop {
        std::thread::park();
    }
}

/// Run the child stopping at change `stop_at` of its checkpoint, kill it there, and return
/// what it printed last.
fn run_child_and_kill(dir: &Path, design: &str, stop_at: &str) -> String {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "child_checkpoints_until_killed",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env(CHILD_DIR, dir)
        .env(CHILD_DESIGN, design)
        .env(CHILD_STOP_AT, stop_at)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut last = String::new();
    for line in lines {
        let line = line.unwrap();
        if line.starts_with("stopped") || line.starts_with("done") {
            last = line;
            break;
        }
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(
        !last.is_empty(),
        "{design}: the child stopped without a result"
    );
    last
}

#[test]
fn a_kill_during_a_checkpoint_leaves_the_source_whole() {
    for design in designs() {
        let tmp = TempDir::new(&format!("kill-{design}"));
        // A store with some history, so that a checkpoint has tables and logs to copy.
        let db = Db::open(tmp.0.join("db"), opts(&design)).unwrap();
        for i in 0..3000 {
            apply(&db, i);
        }
        db.close().unwrap();
        let ckpt = tmp.0.join("ckpt");
        let staging = tmp.0.join("ckpt.checkpoint-tmp");
        // A run that is not stopped counts the changes a checkpoint makes (about one per
        // file, and a few more); then kill at the first few, at points spread over the
        // middle, and at each step of the end: CURRENT.tmp created, renamed to CURRENT,
        // the staging directory renamed, its parent synced. The last run is not stopped.
        let whole = run_child_and_kill(&tmp.0, &design, "none");
        let n: u64 = whole.split_whitespace().last().unwrap().parse().unwrap();
        fs::remove_dir_all(&ckpt).unwrap();
        let mut points: Vec<String> = (0..4)
            .chain((1..8).map(|k| n * k / 8))
            .map(|k| k.to_string())
            .collect();
        points.dedup();
        for p in [
            "create:CURRENT.tmp",
            "rename:CURRENT",
            "rename:ckpt",
            "sync_dir:PARENT",
            "none",
        ] {
            points.push(p.to_string());
        }
        let mut partial = 0;
        for (run, stop_at) in points.iter().enumerate() {
            let last = run_child_and_kill(&tmp.0, &design, stop_at);
            let ctx = format!("{design}, killed at change {stop_at} ({last})");
            // The source opens and holds a prefix.
            shale::verify(tmp.0.join("db"), opts(&design)).unwrap();
            let src = Db::open(tmp.0.join("db"), opts(&design)).unwrap();
            cuts_of(&scan(&src), &format!("{ctx}: the source"));
            src.close().unwrap();
            // The checkpoint is whole (renamed after its CURRENT was written) or absent;
            // what the staging directory holds is never taken for a store: no CURRENT,
            // refused by every open, or nothing at all. The next run reuses it.
            let words: Vec<&str> = last.split_whitespace().collect();
            if let ["done", lo, hi, _] = words.as_slice() {
                check_checkpoint(&ckpt, &design, lo.parse().unwrap(), hi.parse().unwrap());
                assert!(
                    partial > 3,
                    "{ctx}: only {partial} partial checkpoints seen"
                );
                break;
            }
            if ckpt.exists() {
                check_checkpoint(&ckpt, &design, 0, u64::MAX);
                fs::remove_dir_all(&ckpt).unwrap();
            } else if staging.exists() {
                partial += 1;
                let files = fs::read_dir(&staging).unwrap().count();
                if staging.join("CURRENT").exists() {
                    // Killed between CURRENT and the rename: a whole copy.
                    check_checkpoint(&staging, &design, 0, u64::MAX);
                } else if files > 0 {
                    let e = Db::open(&staging, opts(&design)).unwrap_err();
                    assert!(e.is_corruption(), "{ctx}: {e}");
                    let e = Db::open_read_only(&staging, opts(&design)).unwrap_err();
                    assert!(e.is_corruption(), "{ctx}: {e}");
                    assert!(shale::load_options(&staging, Options::default()).is_err());
                }
            }
            assert!(
                run + 1 < points.len(),
                "{design}: the checkpoint never finished"
            );
        }
    }
}

/// A file system that runs `hook` once, at the first file a checkpoint into `ckpt` creates
/// or links (after the checkpoint captured its state and pinned its files).
struct HookFs {
    inner: PosixFs,
    ckpt: PathBuf,
    hook: std::sync::Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl std::fmt::Debug for HookFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookFs").finish()
    }
}

impl HookFs {
    fn file(&self, path: &Path) {
        if path
            .to_string_lossy()
            .contains(&*self.ckpt.to_string_lossy())
        {
            let hook = self.hook.lock().unwrap().take();
            if let Some(hook) = hook {
                hook();
            }
        }
    }
}

impl FileSystem for HookFs {
    fn create(&self, path: &Path) -> shale::Result<Box<dyn WritableFile>> {
        self.file(path);
        self.inner.create(path)
    }
    fn create_log(&self, path: &Path) -> shale::Result<Box<dyn WritableFile>> {
        self.inner.create_log(path)
    }
    fn reopen(&self, path: &Path, at: u64) -> shale::Result<Box<dyn WritableFile>> {
        self.inner.reopen(path, at)
    }
    fn open(&self, path: &Path) -> shale::Result<Arc<dyn RandomAccessFile>> {
        self.inner.open(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> shale::Result<()> {
        self.inner.rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> shale::Result<()> {
        self.inner.remove_file(path)
    }
    fn create_dir_all(&self, path: &Path) -> shale::Result<()> {
        self.inner.create_dir_all(path)
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
    fn hard_link(&self, from: &Path, to: &Path) -> shale::Result<()> {
        self.file(to);
        self.inner.hard_link(from, to)
    }
    fn lock(&self, path: &Path) -> shale::Result<Box<dyn FileLock>> {
        self.inner.lock(path)
    }
}

/// While a checkpoint copies, the source flushes (the logs it copies become obsolete),
/// compacts (its tables too), collects value-log garbage and rewrites its MANIFEST: the
/// obsolete-file sweeps that follow leave every file the checkpoint still copies. A second
/// checkpoint into the same directory meanwhile is refused.
#[test]
fn files_a_checkpoint_copies_outlive_flushes_compactions_and_collection() {
    for design in designs() {
        let tmp = TempDir::new(&format!("pins-{design}"));
        let ckpt = tmp.0.join("ckpt");
        let fs = HookFs {
            inner: PosixFs::new(),
            ckpt: ckpt.clone(),
            hook: std::sync::Mutex::new(None),
        };
        let fs = Arc::new(fs);
        let mut o = opts(&design).with_env(Env::new(Arc::clone(&fs) as Arc<dyn FileSystem>));
        // Every commit rewrites the MANIFEST: the one the checkpoint copies is swept.
        o.max_manifest_bytes = 1;
        let db = Arc::new(Db::open(tmp.0.join("db"), o).unwrap());
        for i in 0..2500 {
            apply(&db, i);
        }
        let busy = Arc::clone(&db);
        let same = ckpt.clone();
        *fs.hook.lock().unwrap() = Some(Box::new(move || {
            // A second checkpoint into the same directory meanwhile is refused.
            let e = busy.checkpoint(&same).unwrap_err();
            assert!(e.to_string().contains("already being built"), "{e}");
            for i in 2500..6000 {
                apply(&busy, i);
            }
            busy.flush().unwrap();
            busy.compact_range(None, None).unwrap();
            while busy.run_value_gc().unwrap() > 0 {}
            busy.flush().unwrap();
        }));
        let info = db.checkpoint(&ckpt).unwrap();
        assert!(fs.hook.lock().unwrap().is_none(), "{design}: the hook ran");
        assert_eq!(
            check_checkpoint(&ckpt, &design, 2500, 2500),
            2500,
            "{info:?}"
        );
        assert_eq!(scan(&db), model_at(6000));
        Arc::into_inner(db).unwrap().close().unwrap();
    }
}

/// The in-memory file system links (the same inode under two names) and renames the
/// staging directory; the fault-injecting one cannot link, so every file is copied.
#[test]
fn checkpoints_on_the_in_memory_file_systems() {
    use shale::env::fault::FaultFs;
    use shale::env::mem::MemFs;
    for (name, env, linked) in [
        ("mem", Env::new(Arc::new(MemFs::new())), true),
        (
            "fault",
            Env::new(Arc::new(FaultFs::new(MemFs::new()))),
            false,
        ),
    ] {
        for design in designs() {
            let o = opts(&design).with_env(env.clone());
            let ckpt = format!("/{name}/{design}/ckpt");
            let db = Db::open(format!("/{name}/{design}/db"), o.clone()).unwrap();
            for i in 0..2500 {
                apply(&db, i);
            }
            db.flush().unwrap();
            let info = db.checkpoint(&ckpt).unwrap();
            if design.ends_with("+dtable") {
                // Appendable tables are copied, never linked: later appends to the store's
                // tables must not reach the checkpoint's.
                assert!(info.files_copied > 2, "{name} {design}: {info:?}");
                assert!(
                    linked || info.files_linked == 0,
                    "{name} {design}: {info:?}"
                );
            } else {
                assert_eq!(info.files_linked > 0, linked, "{name} {design}: {info:?}");
            }
            for i in 2500..4000 {
                apply(&db, i);
            }
            db.close().unwrap();
            assert!(
                !env.fs()
                    .exists(Path::new(&format!("{ckpt}.checkpoint-tmp")))
                    .unwrap()
            );
            let c = Db::open_read_only(&ckpt, o.clone()).unwrap();
            assert_eq!(scan(&c), model_at(2500), "{name} {design}");
            drop(c);
            let db = Db::open(format!("/{name}/{design}/db"), o).unwrap();
            assert_eq!(scan(&db), model_at(4000), "{name} {design}");
        }
    }
}

/// A staging directory holding a file no checkpoint writes is the user's: refused, left.
#[test]
fn a_staging_directory_with_a_foreign_file_is_refused() {
    let design = &designs()[0];
    let tmp = TempDir::new("foreign");
    let db = Db::open(tmp.0.join("db"), opts(design)).unwrap();
    apply(&db, 0);
    let staging = tmp.0.join("ckpt.checkpoint-tmp");
    fs::create_dir_all(&staging).unwrap();
    fs::write(staging.join("notes.txt"), b"mine").unwrap();
    fs::write(staging.join("000009.sst"), b"left by a killed checkpoint").unwrap();
    let e = db.checkpoint(tmp.0.join("ckpt")).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("notes.txt")),
        "{e}"
    );
    assert_eq!(fs::read(staging.join("notes.txt")).unwrap(), b"mine");
    assert!(!tmp.0.join("ckpt").exists());
    // Without it, the leftover is emptied and reused.
    fs::remove_file(staging.join("notes.txt")).unwrap();
    db.checkpoint(tmp.0.join("ckpt")).unwrap();
    assert!(!staging.exists());
    assert!(!tmp.0.join("ckpt").join("000009.sst").exists());
    db.close().unwrap();
    check_checkpoint(&tmp.0.join("ckpt"), design, 1, 1);
}
