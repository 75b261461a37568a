//! A fault-injecting file system over [`MemFs`], for crash and I/O-error tests.
//!
//! [`FaultFs`] passes every operation to a `MemFs` and numbers the *mutating* ones, in the
//! order they happen, from 0. A [`FaultControl`] (a cheap shared handle) then decides, by
//! number, what happens to them:
//!
//! - **Fail op `k`** ([`FaultControl::fail_at`]) with an [`Error::Io`] of kind `Other` whose
//!   message is `injected fault at op k`: once, or from then on (every later mutating
//!   operation fails too, like a disk that went away).
//! - **Crash at op `k`** ([`FaultControl::crash_at`]): just before op `k` runs, the whole
//!   file system (synced and unsynced) is forked into a [`CrashState`], and op `k` and every
//!   later mutating operation fail, so the engine stops changing anything. A `CrashState`
//!   produces crash images ([`CrashState::image`]) in which chosen parts of the unsynced
//!   state survive: none, a torn prefix, a random subset of pages, a torn last append, and
//!   the directory entries never synced.
//! - **Observe op `k`** with a hook ([`FaultControl::set_hook`]) that runs before every
//!   mutating operation with an [`OpView`]: a test can capture a `CrashState` at every op
//!   of one run.
//! - **Read faults**: fail the `n`-th read ([`FaultControl::fail_read_at`]), or flip one bit
//!   of the data returned by reads of matching files ([`FaultControl::flip_read_bits`]).
//! - **Silent write damage** ([`FaultControl::damage_append_when`]): the first append a
//!   predicate picks reports success but is lost, written as zeros, or written with a bit
//!   flipped ([`WriteDamage`]), as a device that acknowledges a write it did not make.
//!
//! # What counts as a mutating operation
//!
//! `create` and `create_log` (both [`OpKind::Create`]), `append`, `flush` and `finish` (both
//! [`OpKind::Flush`]: `finish` is a log's last flush and the cut of its reservation), `sync`,
//! `rename`, `remove_file`, `create_dir_all`, `remove_dir`, `sync_dir` and `lock` (which creates the lock
//! file): every call that can change what the
//! disk holds or what a later crash leaves, and that can fail with an I/O error on a real
//! disk (`flush` is where a `write(2)` happens). Not counted: `open`, `list_dir`, `exists`,
//! `file_size`, reads, and the implicit flush (and, for a log, the cut of its reserved
//! space) when a writable file is dropped (it cannot report an error).
//!
//! # Determinism
//!
//! Mutating operations are serialized by one mutex, held while the operation runs, so op
//! `k` and the state before it are well defined even with background threads, and a hook
//! or crash sees no operation half done. Which thread does op `k` may differ between runs of
//! a multi-threaded workload. Random choices (pages kept, bits flipped) come from a seeded
//! generator, so the same seed gives the same image from the same state.
//!
//! Thread-safety: `FaultFs` and `FaultControl` are shared between threads. A hook must not
//! call back into the `FaultFs` (it runs under the operation mutex).

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use super::mem::MemFs;
use super::{FileLock, FileSyncer, FileSystem, RandomAccessFile, WritableFile};
use crate::error::{Error, Result};

/// Page size used to model partial writeback of unsynced data.
pub const PAGE_SIZE: usize = 4096;

/// How long an injected fault lasts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailMode {
    /// Only the chosen operation fails.
    Once,
    /// The chosen operation and every later one fail.
    FromThenOn,
}

/// The kind of a mutating operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpKind {
    /// [`FileSystem::create`] and [`FileSystem::create_log`].
    Create,
    /// [`WritableFile::append`].
    Append,
    /// [`WritableFile::flush`] and [`WritableFile::finish`].
    Flush,
    /// [`WritableFile::sync`].
    Sync,
    /// [`FileSystem::rename`] (the path is the source).
    Rename,
    /// [`FileSystem::remove_file`].
    RemoveFile,
    /// [`FileSystem::create_dir_all`].
    CreateDirAll,
    /// [`FileSystem::remove_dir`].
    RemoveDir,
    /// [`FileSystem::sync_dir`].
    SyncDir,
    /// [`FileSystem::lock`].
    Lock,
    /// [`FileSystem::reopen`].
    Reopen,
}

impl OpKind {
    /// A short lowercase name, also used as the `op` of injected errors.
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Create => "create",
            OpKind::Append => "append",
            OpKind::Flush => "flush",
            OpKind::Sync => "sync",
            OpKind::Rename => "rename",
            OpKind::RemoveFile => "remove",
            OpKind::CreateDirAll => "create directory",
            OpKind::RemoveDir => "remove directory",
            OpKind::SyncDir => "sync directory",
            OpKind::Lock => "lock",
            OpKind::Reopen => "reopen",
        }
    }
}

/// One mutating operation: its number, kind and path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Op {
    /// Position among the mutating operations of this file system, from 0.
    pub index: u64,
    /// What the operation is.
    pub kind: OpKind,
    /// The file or directory it concerns.
    pub path: PathBuf,
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "op {} ({} {})",
            self.index,
            self.kind.name(),
            self.path.display()
        )
    }
}

/// Runs before every mutating operation, with a view of the operation and of the file
/// system just before it. Must not call into the [`FaultFs`].
pub type OpHook = Arc<dyn Fn(&OpView<'_>) + Send + Sync>;

/// What a hook sees: the operation about to run, and the file system before it.
pub struct OpView<'a> {
    op: &'a Op,
    mem: &'a MemFs,
    last_appends: &'a HashMap<PathBuf, (u64, u64)>,
}

impl OpView<'_> {
    /// The operation about to run.
    pub fn op(&self) -> &Op {
        self.op
    }
    /// The file system (reading it is fine; changing it is not).
    pub fn mem(&self) -> &MemFs {
        self.mem
    }
    /// Fork the file system into a [`CrashState`] for a crash at this operation.
    pub fn capture(&self) -> CrashState {
        CrashState {
            index: self.op.index,
            op: Some(self.op.clone()),
            fs: self.mem.fork(),
            last_appends: self.last_appends.clone(),
        }
    }
}

/// What a silently damaged append does ([`FaultControl::damage_append_when`]): the append
/// reports success, as a disk or file system that acknowledges a write it lost or made
/// wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteDamage {
    /// Nothing reaches the file (a lost write): what follows lands where these bytes
    /// should have been.
    Drop,
    /// The bytes reach the file as zeros (a write never made to the medium, reading back
    /// zeros).
    Zero,
    /// The bytes reach the file with one bit flipped (the lowest bit of the middle byte).
    FlipBit,
}

/// Chooses an operation to fail by what it is rather than by its number (numbers differ
/// between runs of a multi-threaded workload). May keep state, to skip matches.
pub type OpPredicate = Arc<dyn Fn(&Op) -> bool + Send + Sync>;

/// What survives of the bytes appended to a file after its last sync.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnsyncedData {
    /// Nothing: the model of [`MemFs::crash`].
    Drop,
    /// Everything that reached the file system (the page cache was written back in full).
    Keep,
    /// A random prefix, cut at any byte (the writeback stopped in the middle of a page).
    TornPrefix,
    /// Each 4 KiB page (aligned to file offsets; the page holding the synced end counts
    /// with its unsynced part) independently with probability 1/2; a lost page before a kept
    /// one reads as zeros (as a hole does on a real file system), and the last kept page may
    /// be torn.
    RandomPages,
    /// Everything before the last append to the file, and a random prefix of the last
    /// append (a torn final write).
    TearLastAppend,
}

impl UnsyncedData {
    /// Every variant, in order.
    pub const ALL: [UnsyncedData; 5] = [
        UnsyncedData::Drop,
        UnsyncedData::Keep,
        UnsyncedData::TornPrefix,
        UnsyncedData::RandomPages,
        UnsyncedData::TearLastAppend,
    ];
}

/// What survives of directory changes (create, rename, remove) not yet made durable by a
/// directory sync.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnsyncedNames {
    /// They are forgotten: the model of [`MemFs::crash`].
    Forget,
    /// They all survive, in order (a journaling file system committed them).
    Keep,
}

/// The file system at a crash point: everything, synced or not, plus what is needed to
/// build images in which parts of the unsynced state survive.
#[derive(Clone, Debug)]
pub struct CrashState {
    index: u64,
    op: Option<Op>,
    fs: MemFs,
    last_appends: HashMap<PathBuf, (u64, u64)>,
}

impl CrashState {
    /// The number of the operation the crash came just before (it did not run).
    pub fn index(&self) -> u64 {
        self.index
    }

    /// That operation, when the crash was taken at one ([`FaultControl::crash_at`], a
    /// hook); `None` for [`FaultControl::capture`].
    pub fn op(&self) -> Option<&Op> {
        self.op.as_ref()
    }

    /// The whole file system just before the crash, unsynced state included. Reopening it
    /// as is models a process crash (the operating system kept everything it was handed).
    pub fn fs(&self) -> &MemFs {
        &self.fs
    }

    /// A crash image: a new file system holding what survives the crash when `data` and
    /// `names` say which unsynced state survives. `seed` drives the random choices.
    pub fn image(&self, data: UnsyncedData, names: UnsyncedNames, seed: u64) -> MemFs {
        let mut rng = Rng::new(seed ^ self.index.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let keep_names = names == UnsyncedNames::Keep;
        let last_appends = &self.last_appends;
        self.fs
            // Everything the OS was handed survives in `Keep`: the size of a log whose
            // reservation was cut, too.
            .crash_image_with(
                keep_names,
                data == UnsyncedData::Keep,
                &mut |path, synced, unsynced| {
                    let len = unsynced.len();
                    if len == 0 {
                        return Vec::new();
                    }
                    match data {
                        UnsyncedData::Drop => Vec::new(),
                        UnsyncedData::Keep => unsynced.to_vec(),
                        UnsyncedData::TornPrefix => {
                            let cut = rng.below(len as u64 + 1) as usize;
                            unsynced.get(..cut).unwrap_or_default().to_vec()
                        }
                        UnsyncedData::RandomPages => random_pages(synced, unsynced, &mut rng),
                        UnsyncedData::TearLastAppend => {
                            // Keep the unsynced bytes before the last append, and a prefix of
                            // the part of it that reached the file (file offsets, made relative
                            // to the unsynced tail).
                            let Some(&(start, end)) = last_appends.get(path) else {
                                return Vec::new();
                            };
                            let rel = |off: u64| (off.saturating_sub(synced) as usize).min(len);
                            let (start, end) = (rel(start), rel(end));
                            let keep = start + rng.below((end - start) as u64 + 1) as usize;
                            unsynced.get(..keep).unwrap_or_default().to_vec()
                        }
                    }
                },
            )
    }
}

/// Keep each page with probability 1/2, pages being aligned to file offsets (the unsynced
/// tail starts at file offset `synced`, so its first piece is the rest of a page). A lost
/// piece before the last kept one reads as zeros; the last kept piece may be torn.
fn random_pages(synced: u64, unsynced: &[u8], rng: &mut Rng) -> Vec<u8> {
    let page = PAGE_SIZE as u64;
    let first = (page - synced % page) as usize;
    let mut pieces: Vec<&[u8]> = Vec::new();
    let (head, rest) = unsynced.split_at(first.min(unsynced.len()));
    pieces.push(head);
    pieces.extend(rest.chunks(PAGE_SIZE));
    let kept: Vec<bool> = pieces.iter().map(|_| rng.below(2) == 1).collect();
    let Some(last) = kept.iter().rposition(|&k| k) else {
        return Vec::new();
    };
    let mut out = Vec::with_capacity(unsynced.len());
    let mut last_start = 0;
    for (piece, &keep) in pieces.iter().zip(&kept).take(last + 1) {
        last_start = out.len();
        if keep {
            out.extend_from_slice(piece);
        } else {
            out.resize(out.len() + piece.len(), 0);
        }
    }
    let tear = rng.below(PAGE_SIZE as u64) as usize;
    if tear > 0 {
        out.truncate(last_start + tear.min(out.len() - last_start));
    }
    out
}

/// A small deterministic generator (SplitMix64); enough for choosing pages and bits.
#[derive(Clone, Debug)]
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (0 for `n == 0`).
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }
}

/// Bit flips in data returned by reads of files whose path contains `pattern`.
#[derive(Debug)]
struct FlipRule {
    pattern: String,
    one_in: u64,
    rng: Rng,
}

/// The state behind the operation mutex.
#[derive(Default)]
struct Control {
    ops: u64,
    fail: Option<(u64, FailMode)>,
    fail_when: Option<(OpPredicate, FailMode)>,
    /// Set once a from-then-on fault or a crash has begun.
    failing: bool,
    injected: Vec<Op>,
    crash_at: Option<u64>,
    crash: Option<CrashState>,
    hook: Option<OpHook>,
    /// File offsets `[start, end)` of the last append to each path.
    last_appends: HashMap<PathBuf, (u64, u64)>,
    /// The next append the predicate picks is damaged silently.
    damage_when: Option<(OpPredicate, WriteDamage)>,
    /// The appends damaged so far.
    damaged: Vec<Op>,
}

#[derive(Default)]
struct ReadControl {
    fail: Option<(u64, FailMode)>,
    failing: bool,
    injected: u64,
    flip: Option<FlipRule>,
    flips: u64,
}

struct Shared {
    mem: MemFs,
    /// Held for the whole of every mutating operation.
    control: Mutex<Control>,
    reads: AtomicU64,
    read_control: Mutex<ReadControl>,
}

/// A [`FileSystem`] that wraps a [`MemFs`] and injects faults; see the module documentation.
#[derive(Clone)]
pub struct FaultFs {
    shared: Arc<Shared>,
}

/// The shared handle that configures and observes a [`FaultFs`].
#[derive(Clone)]
pub struct FaultControl {
    shared: Arc<Shared>,
}

impl fmt::Debug for FaultFs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FaultFs")
            .field("mem", &self.shared.mem)
            .finish()
    }
}

impl fmt::Debug for FaultControl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FaultControl")
            .field("ops", &self.ops())
            .field("reads", &self.reads())
            .finish()
    }
}

fn injected(kind: OpKind, path: &Path, what: String) -> Error {
    Error::io(kind.name(), path, io::Error::other(what))
}

impl FaultFs {
    /// Wrap `mem`; no fault is armed.
    pub fn new(mem: MemFs) -> FaultFs {
        FaultFs {
            shared: Arc::new(Shared {
                mem,
                control: Mutex::new(Control::default()),
                reads: AtomicU64::new(0),
                read_control: Mutex::new(ReadControl::default()),
            }),
        }
    }

    /// The handle that arms faults and reads counters.
    pub fn control(&self) -> FaultControl {
        FaultControl {
            shared: Arc::clone(&self.shared),
        }
    }

    /// The wrapped file system.
    pub fn mem(&self) -> &MemFs {
        &self.shared.mem
    }
}

impl Shared {
    /// Run mutating operation `kind` on `path`: number it, run the hook, apply a crash or a
    /// fault, else run `f` under the operation mutex.
    fn mutate<T>(
        &self,
        kind: OpKind,
        path: &Path,
        f: impl FnOnce(&mut Control) -> Result<T>,
    ) -> Result<T> {
        let mut c = self.control.lock();
        let index = c.ops;
        c.ops += 1;
        let op = Op {
            index,
            kind,
            path: path.to_path_buf(),
        };
        if let Some(hook) = c.hook.clone() {
            hook(&OpView {
                op: &op,
                mem: &self.mem,
                last_appends: &c.last_appends,
            });
        }
        if c.crash_at == Some(index) {
            c.crash = Some(CrashState {
                index,
                op: Some(op.clone()),
                fs: self.mem.fork(),
                last_appends: c.last_appends.clone(),
            });
            c.failing = true;
        }
        let by_number = matches!(c.fail, Some((k, _)) if k == index);
        let by_predicate = match &c.fail_when {
            Some((pred, _)) => pred(&op),
            None => false,
        };
        let mode = if by_number {
            c.fail.map(|(_, m)| m)
        } else if by_predicate {
            // A predicate fires once: later matches are not failed again.
            c.fail_when.take().map(|(_, m)| m)
        } else {
            None
        };
        if mode == Some(FailMode::FromThenOn) {
            c.failing = true;
        }
        if c.failing || mode.is_some() {
            let e = injected(kind, path, format!("injected fault at op {index}"));
            c.injected.push(op);
            return Err(e);
        }
        f(&mut c)
    }

    /// Count a read of `path`; fail it, or say whether (and which bit) to flip.
    fn before_read(&self, path: &Path, len: usize) -> Result<Option<usize>> {
        let n = self.reads.fetch_add(1, Ordering::SeqCst);
        let mut r = self.read_control.lock();
        let fail = r.failing
            || match r.fail {
                Some((k, mode)) if k == n => {
                    r.failing = mode == FailMode::FromThenOn;
                    true
                }
                _ => false,
            };
        if fail {
            r.injected += 1;
            return Err(Error::io(
                "read",
                path,
                io::Error::other(format!("injected fault at read {n}")),
            ));
        }
        let Some(rule) = r.flip.as_mut() else {
            return Ok(None);
        };
        if len == 0 || !path.to_string_lossy().contains(rule.pattern.as_str()) {
            return Ok(None);
        }
        if rule.rng.below(rule.one_in) != 0 {
            return Ok(None);
        }
        let bit = rule.rng.below(len as u64 * 8) as usize;
        r.flips += 1;
        Ok(Some(bit))
    }
}

impl FaultControl {
    /// Mutating operations so far (the next one gets this number).
    pub fn ops(&self) -> u64 {
        self.shared.control.lock().ops
    }

    /// Fail mutating op `k` (and, with [`FailMode::FromThenOn`], every later one).
    /// Replaces an earlier `fail_at`.
    pub fn fail_at(&self, k: u64, mode: FailMode) {
        self.shared.control.lock().fail = Some((k, mode));
    }

    /// Fail the first mutating operation for which `pred` returns true (and, with
    /// [`FailMode::FromThenOn`], every later one). The predicate sees every operation until
    /// it fires, then is dropped.
    pub fn fail_when(&self, pred: OpPredicate, mode: FailMode) {
        self.shared.control.lock().fail_when = Some((pred, mode));
    }

    /// Crash at mutating op `k`: fork the file system just before it into a
    /// [`CrashState`] (see [`FaultControl::take_crash`]) and fail it and every later op.
    pub fn crash_at(&self, k: u64) {
        self.shared.control.lock().crash_at = Some(k);
    }

    /// The crash state captured by [`FaultControl::crash_at`], once the crash happened.
    pub fn take_crash(&self) -> Option<CrashState> {
        self.shared.control.lock().crash.take()
    }

    /// Fork the file system now into a [`CrashState`] (as a crash before the next op would).
    pub fn capture(&self) -> CrashState {
        let c = self.shared.control.lock();
        CrashState {
            index: c.ops,
            op: None,
            fs: self.shared.mem.fork(),
            last_appends: c.last_appends.clone(),
        }
    }

    /// Run `hook` before every mutating operation (`None` removes it).
    pub fn set_hook(&self, hook: Option<OpHook>) {
        self.shared.control.lock().hook = hook;
    }

    /// Disarm every write and read fault and crash, and let operations succeed again. The
    /// counters keep counting.
    pub fn clear_faults(&self) {
        {
            let mut c = self.shared.control.lock();
            c.fail = None;
            c.fail_when = None;
            c.failing = false;
            c.crash_at = None;
            c.damage_when = None;
        }
        let mut r = self.shared.read_control.lock();
        r.fail = None;
        r.failing = false;
        r.flip = None;
    }

    /// Damage the first append `pred` picks without reporting it ([`WriteDamage`]): the
    /// append returns `Ok`. The predicate sees every append until it fires, then is
    /// dropped. Not undone by [`FaultControl::clear_faults`] once fired (the bytes are what
    /// they are); an unfired one is disarmed by it.
    pub fn damage_append_when(&self, pred: OpPredicate, damage: WriteDamage) {
        self.shared.control.lock().damage_when = Some((pred, damage));
    }

    /// The appends damaged so far by [`FaultControl::damage_append_when`], in order.
    pub fn damaged(&self) -> Vec<Op> {
        self.shared.control.lock().damaged.clone()
    }

    /// The mutating operations that were failed so far, in order.
    pub fn injected(&self) -> Vec<Op> {
        self.shared.control.lock().injected.clone()
    }

    /// Reads so far (the next one gets this number).
    pub fn reads(&self) -> u64 {
        self.shared.reads.load(Ordering::SeqCst)
    }

    /// Fail read `n` (counting every `read_exact_at` from 0), and with
    /// [`FailMode::FromThenOn`] every later read.
    pub fn fail_read_at(&self, n: u64, mode: FailMode) {
        self.shared.read_control.lock().fail = Some((n, mode));
    }

    /// Reads failed so far.
    pub fn injected_reads(&self) -> u64 {
        self.shared.read_control.lock().injected
    }

    /// Flip one random bit in the data returned by one in `one_in` reads of files whose
    /// path contains `pattern` (the file itself is not changed). `seed` makes it repeatable.
    pub fn flip_read_bits(&self, pattern: &str, one_in: u64, seed: u64) {
        self.shared.read_control.lock().flip = Some(FlipRule {
            pattern: pattern.to_string(),
            one_in: one_in.max(1),
            rng: Rng::new(seed),
        });
    }

    /// Bits flipped so far.
    pub fn flipped_bits(&self) -> u64 {
        self.shared.read_control.lock().flips
    }
}

impl FaultFs {
    fn create_file(&self, path: &Path, log: bool) -> Result<Box<dyn WritableFile>> {
        let inner = self.shared.mutate(OpKind::Create, path, |c| {
            c.last_appends.remove(path);
            if log {
                self.shared.mem.create_log(path)
            } else {
                self.shared.mem.create(path)
            }
        })?;
        Ok(Box::new(FaultWritable {
            inner: Some(inner),
            path: path.to_path_buf(),
            shared: Arc::clone(&self.shared),
        }))
    }
}

impl FileSystem for FaultFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.create_file(path, false)
    }

    fn create_log(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.create_file(path, true)
    }

    fn reopen(&self, path: &Path, at: u64) -> Result<Box<dyn WritableFile>> {
        let inner = self.shared.mutate(OpKind::Reopen, path, |c| {
            c.last_appends.remove(path);
            self.shared.mem.reopen(path, at)
        })?;
        Ok(Box::new(FaultWritable {
            inner: Some(inner),
            path: path.to_path_buf(),
            shared: Arc::clone(&self.shared),
        }))
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let inner = self.shared.mem.open(path)?;
        Ok(Arc::new(FaultRead {
            inner,
            path: path.to_path_buf(),
            shared: Arc::clone(&self.shared),
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.shared.mutate(OpKind::Rename, from, |c| {
            self.shared.mem.rename(from, to)?;
            match c.last_appends.remove(from) {
                Some(a) => c.last_appends.insert(to.to_path_buf(), a),
                None => c.last_appends.remove(to),
            };
            Ok(())
        })
    }

    fn remove_file(&self, path: &Path) -> Result<()> {
        self.shared.mutate(OpKind::RemoveFile, path, |_| {
            self.shared.mem.remove_file(path)
        })
    }

    fn create_dir_all(&self, path: &Path) -> Result<()> {
        self.shared.mutate(OpKind::CreateDirAll, path, |_| {
            self.shared.mem.create_dir_all(path)
        })
    }

    fn remove_dir(&self, path: &Path) -> Result<()> {
        self.shared.mutate(OpKind::RemoveDir, path, |_| {
            self.shared.mem.remove_dir(path)
        })
    }

    fn list_dir(&self, path: &Path) -> Result<Vec<String>> {
        self.shared.mem.list_dir(path)
    }

    fn sync_dir(&self, path: &Path) -> Result<()> {
        self.shared
            .mutate(OpKind::SyncDir, path, |_| self.shared.mem.sync_dir(path))
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        self.shared.mem.exists(path)
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        self.shared.mem.file_size(path)
    }

    fn punch_hole(&self, path: &Path, offset: u64, len: u64) -> Result<bool> {
        self.shared.mem.punch_hole(path, offset, len)
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        self.shared
            .mutate(OpKind::Lock, path, |_| self.shared.mem.lock(path))
    }
}

/// A writable file whose operations are numbered and may fail.
struct FaultWritable {
    /// `None` only while being dropped.
    inner: Option<Box<dyn WritableFile>>,
    path: PathBuf,
    shared: Arc<Shared>,
}

impl FaultWritable {
    fn op<T>(
        &mut self,
        kind: OpKind,
        f: impl FnOnce(&mut dyn WritableFile, &mut Control) -> Result<T>,
    ) -> Result<T> {
        let Some(inner) = self.inner.as_mut() else {
            return Err(injected(kind, &self.path, "file already closed".into()));
        };
        self.shared
            .mutate(kind, &self.path, |c| f(inner.as_mut(), c))
    }
}

impl WritableFile for FaultWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        let path = self.path.clone();
        self.op(OpKind::Append, |f, c| {
            let start = f.len();
            let op = Op {
                index: c.ops.saturating_sub(1),
                kind: OpKind::Append,
                path: path.clone(),
            };
            let damage = match &c.damage_when {
                Some((pred, d)) if pred(&op) => Some(*d),
                _ => None,
            };
            match damage {
                None => f.append(data)?,
                Some(d) => {
                    c.damage_when = None;
                    c.damaged.push(op);
                    match d {
                        WriteDamage::Drop => {}
                        WriteDamage::Zero => f.append(&vec![0; data.len()])?,
                        WriteDamage::FlipBit => {
                            let mut bytes = data.to_vec();
                            if let Some(b) = bytes.get_mut(data.len() / 2) {
                                *b ^= 1;
                            }
                            f.append(&bytes)?;
                        }
                    }
                }
            }
            c.last_appends.insert(path, (start, f.len()));
            Ok(())
        })
    }

    fn flush(&mut self) -> Result<()> {
        self.op(OpKind::Flush, |f, _| f.flush())
    }

    fn sync(&mut self) -> Result<()> {
        self.op(OpKind::Sync, |f, _| f.sync())
    }

    fn finish(&mut self) -> Result<()> {
        self.op(OpKind::Flush, |f, _| f.finish())
    }

    fn len(&self) -> u64 {
        self.inner.as_ref().map_or(0, |f| f.len())
    }

    fn syncer(&self) -> Option<Arc<dyn FileSyncer>> {
        let inner = self.inner.as_ref()?.syncer()?;
        Some(Arc::new(FaultSyncer {
            inner,
            path: self.path.clone(),
            shared: Arc::clone(&self.shared),
        }))
    }
}

/// A syncer whose syncs are numbered mutating operations ([`OpKind::Sync`]) and may fail.
struct FaultSyncer {
    inner: Arc<dyn FileSyncer>,
    path: PathBuf,
    shared: Arc<Shared>,
}

impl FileSyncer for FaultSyncer {
    fn sync_data(&self) -> Result<()> {
        self.shared
            .mutate(OpKind::Sync, &self.path, |_| self.inner.sync_data())
    }
}

impl Drop for FaultWritable {
    fn drop(&mut self) {
        // Dropping flushes buffered bytes into the file: do it under the operation mutex so
        // that a hook or crash never sees it half done.
        let _c = self.shared.control.lock();
        self.inner.take();
    }
}

/// A read handle whose reads are counted and may fail or return a flipped bit.
struct FaultRead {
    inner: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    shared: Arc<Shared>,
}

impl RandomAccessFile for FaultRead {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let flip = self.shared.before_read(&self.path, buf.len())?;
        self.inner.read_exact_at(buf, offset)?;
        if let Some(bit) = flip
            && let Some(b) = buf.get_mut(bit / 8)
        {
            *b ^= 1 << (bit % 8);
        }
        Ok(())
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn advise(&self, access: super::Access) {
        self.inner.advise(access);
    }
}

#[cfg(test)]
mod tests;
