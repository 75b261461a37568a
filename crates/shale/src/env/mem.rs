//! An in-memory file system that models what survives a machine crash.
//!
//! The model (also described in `docs/env.md`):
//!
//! - A file is an *inode*: its bytes `data` and `synced_len`, the prefix made durable by the
//!   last [`WritableFile::sync`]. Files are append-only, so the durable contents are exactly
//!   `data[..synced_len]`. [`FileSystem::create`] always makes a new inode, even over an
//!   existing name: truncation is "a new file under the old name", so the old contents stay
//!   durable until the directory is synced.
//! - Names live in two maps from path to inode: the *live* namespace that every operation
//!   sees and changes (`create`, `rename`, `remove_file`, `lock`), and the *durable*
//!   namespace, which changes only when [`FileSystem::sync_dir`] copies the live entries of
//!   that one directory into it (additions, replacements and removals).
//! - [`MemFs::crash`] is a machine crash followed by a reboot: the live namespace becomes the
//!   durable one and every inode is cut back to its synced length. File handles opened
//!   before the crash fail every later operation, so a thread that outlived the "machine"
//!   cannot write into the rebooted one. Locks are not released: the caller drops its store
//!   first.
//! - Directories are durable as soon as [`FileSystem::create_dir_all`] returns (the engine
//!   creates its directory once, before any file in it matters). An operation whose parent
//!   directory does not exist fails with `NotFound`, as on a real file system.
//! - A writable file keeps appended bytes in a private buffer until `flush` (or `sync`, or an
//!   append that overflows the buffer, or drop), like [`super::posix::PosixFs`]: readers that
//!   forget to flush see the same missing bytes they would on a disk.
//! - A log ([`FileSystem::create_log`]) reserves space as the POSIX backend does: from its
//!   creation and after each flush its inode ends in 1 to [`LOG_RESERVE`] zero bytes past
//!   the flushed bytes (to the next multiple of `LOG_RESERVE`), which readers, `file_size`
//!   and forks (a process crash) see. A sync makes the flushed bytes durable and the file's
//!   *size*, reserved zeros included (as `fdatasync` does after `fallocate`): a crash keeps
//!   the synced bytes and at least that size, the rest reading as zeros where no unsynced
//!   byte survived. [`WritableFile::finish`] and the handle's drop cut the zeros off, and
//!   the cut too is durable only with the next sync.
//!
//! Thread-safety: [`MemFs`] is a cheap handle (`Clone` shares the same file system); all
//! state sits behind one mutex, and each inode behind its own so that reads of different
//! files do not wait on each other for long.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use super::{FileLock, FileSyncer, FileSystem, RandomAccessFile, WritableFile};
use crate::error::{Error, Result};

/// Appends are gathered in a handle-local buffer up to this size, as the POSIX backend does.
const WRITE_BUFFER: usize = 64 * 1024;

/// A log's flushed bytes are followed by zeros up to the next multiple of this.
pub const LOG_RESERVE: usize = 16 * 1024;

/// One file's bytes. Shared by every name and handle that refers to it.
#[derive(Debug)]
struct Inode {
    /// Identity, so that a snapshot keeps two names of one inode as one inode.
    id: u64,
    data: Vec<u8>,
    /// `data[..synced_len]` survives a crash.
    synced_len: usize,
    /// The size the file had at its last sync: a crash leaves it at least this long (zeros
    /// where nothing else survived). Above `data.len()` only after a log's reservation was
    /// cut and not yet synced.
    durable_len: usize,
    /// Zeros at the end of `data` that a log's handle reserved (never written): a sync does
    /// not count them, and a flush writes over them.
    reserved: usize,
}

impl Inode {
    /// The end of the bytes written (the reservation excluded).
    fn written_len(&self) -> usize {
        self.data.len() - self.reserved.min(self.data.len())
    }
}

type InodeRef = Arc<Mutex<Inode>>;

#[derive(Default)]
struct State {
    next_inode: u64,
    live: BTreeMap<PathBuf, InodeRef>,
    durable: BTreeMap<PathBuf, InodeRef>,
    dirs: BTreeSet<PathBuf>,
    locks: HashSet<PathBuf>,
}

struct Shared {
    /// Lock order: `state` before any inode.
    state: Mutex<State>,
    /// Number of crashes so far. A handle remembers the value at its opening and refuses to
    /// work once it changed. Bumped before inodes are truncated, and checked by handles
    /// while they hold their inode's lock, so a handle's operation either happens entirely
    /// before the crash's truncation of that inode or fails.
    crashes: AtomicU64,
    /// The most bytes the named files may hold ([`MemFs::set_capacity`]); `u64::MAX`: no
    /// limit.
    capacity: AtomicU64,
    /// Every [`RandomAccessFile::advise`] call, in order: the path and the advice
    /// ([`MemFs::advice`]; the bytes read do not depend on it).
    advice: Mutex<Vec<(PathBuf, super::Access)>>,
    /// Run by `punch_hole` between its check of the file's names and the punch (tests force
    /// a hard link into that window).
    #[cfg(test)]
    punch_hook: Mutex<Option<PunchHook>>,
}

/// See `Shared::punch_hook`.
#[cfg(test)]
pub(crate) type PunchHook = Arc<dyn Fn(&Path) + Send + Sync>;

impl Shared {
    /// Bytes held by the files the live namespace names (each inode once, a log's reserved
    /// zeros included). Takes the state lock and then each inode's: call it holding none.
    fn used(&self) -> u64 {
        let state = self.state.lock();
        let mut seen = HashSet::new();
        state
            .live
            .values()
            .filter_map(|ino| {
                let ino = ino.lock();
                seen.insert(ino.id).then_some(ino.data.len() as u64)
            })
            .sum()
    }
}

/// Chooses what survives of one file's unsynced tail in [`MemFs::crash_image_with`]:
/// called with the path, the synced length and the unsynced bytes.
pub type TailFn<'a> = dyn FnMut(&Path, u64, &[u8]) -> Vec<u8> + 'a;

/// An in-memory file system with a crash model; see the module documentation.
#[derive(Clone)]
pub struct MemFs {
    shared: Arc<Shared>,
}

impl Default for MemFs {
    fn default() -> Self {
        MemFs::new()
    }
}

impl fmt::Debug for MemFs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // try_lock: formatting must not deadlock if it happens while the state is held.
        let mut d = f.debug_struct("MemFs");
        d.field("crashes", &self.shared.crashes.load(Ordering::SeqCst));
        match self.shared.state.try_lock() {
            Some(state) => {
                let files: Vec<(&Path, usize)> = state
                    .live
                    .iter()
                    .map(|(p, ino)| (p.as_path(), ino.try_lock().map_or(0, |i| i.data.len())))
                    .collect();
                d.field("files", &files).field("dirs", &state.dirs)
            }
            None => d.field("state", &"<locked>"),
        };
        d.finish()
    }
}

fn io_error(op: &'static str, path: &Path, kind: io::ErrorKind, msg: &str) -> Error {
    Error::io(op, path, io::Error::new(kind, msg.to_string()))
}

fn not_found(op: &'static str, path: &Path) -> Error {
    io_error(op, path, io::ErrorKind::NotFound, "no such file")
}

fn is_a_directory(op: &'static str, path: &Path) -> Error {
    io_error(op, path, io::ErrorKind::IsADirectory, "is a directory")
}

fn stale(op: &'static str, path: &Path) -> Error {
    io_error(
        op,
        path,
        io::ErrorKind::Other,
        "file handle was opened before a simulated crash",
    )
}

impl State {
    fn dir_exists(&self, dir: &Path) -> bool {
        // The empty path (parent of a relative name) and the root always exist.
        dir.parent().is_none() || self.dirs.contains(dir)
    }

    /// The parent directory of `path` must exist for `path` to be created or renamed to.
    fn check_parent(&self, op: &'static str, path: &Path) -> Result<()> {
        match path.parent() {
            Some(parent) if !self.dir_exists(parent) => Err(io_error(
                op,
                path,
                io::ErrorKind::NotFound,
                &format!("parent directory {} does not exist", parent.display()),
            )),
            _ => Ok(()),
        }
    }

    /// The live inode at `path`, or the right error for a missing file or a directory.
    fn live_file(&self, op: &'static str, path: &Path) -> Result<&InodeRef> {
        match self.live.get(path) {
            Some(ino) => Ok(ino),
            None if self.dir_exists(path) => Err(is_a_directory(op, path)),
            None => Err(not_found(op, path)),
        }
    }

    /// See [`MemFs`]'s `rename`.
    fn rename_dir(&mut self, from: &Path, to: &Path) -> Result<()> {
        self.check_parent("rename", to)?;
        if self.live.contains_key(to) || to.starts_with(from) {
            return Err(io_error(
                "rename",
                from,
                io::ErrorKind::InvalidInput,
                &format!("cannot rename a directory to {}", to.display()),
            ));
        }
        let under = |p: &Path, d: &Path| p.starts_with(d) && p != d;
        if self
            .live
            .keys()
            .chain(self.dirs.iter())
            .any(|p| under(p, to))
        {
            return Err(io_error(
                "rename",
                to,
                io::ErrorKind::DirectoryNotEmpty,
                "the target directory is not empty",
            ));
        }
        let moved = |p: &Path| to.join(p.strip_prefix(from).unwrap_or(p));
        for map in [&mut self.live, &mut self.durable] {
            let keys: Vec<PathBuf> = map.keys().filter(|p| under(p, from)).cloned().collect();
            for k in keys {
                if let Some(ino) = map.remove(&k) {
                    map.insert(moved(&k), ino);
                }
            }
        }
        let dirs: Vec<PathBuf> = self
            .dirs
            .iter()
            .filter(|p| p.starts_with(from))
            .cloned()
            .collect();
        for d in dirs {
            self.dirs.remove(&d);
            self.dirs.insert(moved(&d));
        }
        Ok(())
    }

    fn new_inode(&mut self) -> InodeRef {
        self.next_inode += 1;
        Arc::new(Mutex::new(Inode {
            id: self.next_inode,
            data: Vec::new(),
            synced_len: 0,
            durable_len: 0,
            reserved: 0,
        }))
    }
}

fn in_dir(path: &Path, dir: &Path) -> bool {
    path.parent() == Some(dir)
}

impl MemFs {
    /// An empty file system (only the root directory exists).
    pub fn new() -> MemFs {
        MemFs::from_state(State::default())
    }

    fn from_state(state: State) -> MemFs {
        MemFs {
            shared: Arc::new(Shared {
                state: Mutex::new(state),
                crashes: AtomicU64::new(0),
                capacity: AtomicU64::new(u64::MAX),
                advice: Mutex::new(Vec::new()),
                #[cfg(test)]
                punch_hook: Mutex::new(None),
            }),
        }
    }

    /// Run `hook` in every `punch_hole` after the check of the file's names, before the
    /// punch (`None` removes it).
    #[cfg(test)]
    pub(crate) fn set_punch_hook(&self, hook: Option<PunchHook>) {
        *self.shared.punch_hook.lock() = hook;
    }

    /// Make the file system hold at most `bytes` (the data of every file it names, a log's
    /// reserved zeros included): a write that would go past it fails with
    /// `ErrorKind::StorageFull` ("no space left on device") and writes nothing, as on a
    /// full disk. Lowering it below what is held frees nothing; raising it is freeing space.
    /// `None` (the default): no limit.
    pub fn set_capacity(&self, bytes: Option<u64>) {
        self.shared
            .capacity
            .store(bytes.unwrap_or(u64::MAX), Ordering::SeqCst);
    }

    /// Every read-ahead hint given to a handle of this file system
    /// ([`RandomAccessFile::advise`]), oldest first: the file's path and the advice.
    pub fn advice(&self) -> Vec<(PathBuf, super::Access)> {
        self.shared.advice.lock().clone()
    }

    /// Bytes held by the files it names, as [`MemFs::set_capacity`] counts them.
    pub fn used_bytes(&self) -> u64 {
        self.shared.used()
    }

    /// Simulate a machine crash and reboot: directory entries not made durable by
    /// [`FileSystem::sync_dir`] revert, and every file loses the bytes appended after its
    /// last sync. Handles opened before the crash fail from now on; locks stay held until
    /// their guards are dropped.
    pub fn crash(&self) {
        let mut state = self.shared.state.lock();
        self.shared.crashes.fetch_add(1, Ordering::SeqCst);
        state.live = state.durable.clone();
        for ino in state.durable.values() {
            let mut ino = ino.lock();
            let synced = ino.synced_len;
            ino.data.truncate(synced);
            let size = ino.durable_len.max(synced);
            ino.data.resize(size, 0);
            ino.synced_len = size;
            ino.durable_len = size;
            ino.reserved = 0;
        }
    }

    /// The same as [`MemFs::crash`]: drop everything that was not made durable. Named for
    /// fault-injection code that reads better with it.
    pub fn drop_unsynced_data(&self) {
        self.crash();
    }

    /// The crash image: a new, independent file system holding what would survive a crash
    /// now (its live and durable state are both this one's durable state). `self` is not
    /// changed, so a test can take an image at every step and keep going.
    pub fn snapshot_durable(&self) -> MemFs {
        let state = self.shared.state.lock();
        let mut copies: HashMap<u64, InodeRef> = HashMap::new();
        let mut durable = BTreeMap::new();
        for (path, ino) in &state.durable {
            let ino = ino.lock();
            let copy = copies.entry(ino.id).or_insert_with(|| {
                let mut kept = ino.data.get(..ino.synced_len).unwrap_or(&ino.data).to_vec();
                if kept.len() < ino.durable_len {
                    kept.resize(ino.durable_len, 0);
                }
                let len = kept.len();
                Arc::new(Mutex::new(Inode {
                    id: ino.id,
                    data: kept,
                    synced_len: len,
                    durable_len: len,
                    reserved: 0,
                }))
            });
            durable.insert(path.clone(), Arc::clone(copy));
        }
        MemFs::from_state(State {
            next_inode: state.next_inode,
            live: durable.clone(),
            durable,
            dirs: state.dirs.clone(),
            locks: HashSet::new(),
        })
    }

    /// An independent deep copy of the whole file system: both namespaces, and every file's
    /// bytes including those not yet synced (the synced length is kept). Locks and buffers of
    /// open handles are not copied. The fault-injecting layer forks at a crash point and
    /// derives crash images from the fork with [`MemFs::crash_image_with`].
    pub fn fork(&self) -> MemFs {
        let state = self.shared.state.lock();
        let mut copies: HashMap<u64, InodeRef> = HashMap::new();
        let mut copy_map = |map: &BTreeMap<PathBuf, InodeRef>| -> BTreeMap<PathBuf, InodeRef> {
            map.iter()
                .map(|(path, ino)| {
                    let ino = ino.lock();
                    let copy = copies.entry(ino.id).or_insert_with(|| {
                        // A fork outlives the handles: reserved zeros are plain bytes in it.
                        Arc::new(Mutex::new(Inode {
                            id: ino.id,
                            data: ino.data.clone(),
                            synced_len: ino.synced_len,
                            durable_len: ino.durable_len,
                            reserved: 0,
                        }))
                    });
                    (path.clone(), Arc::clone(copy))
                })
                .collect()
        };
        let live = copy_map(&state.live);
        let durable = copy_map(&state.durable);
        MemFs::from_state(State {
            next_inode: state.next_inode,
            live,
            durable,
            dirs: state.dirs.clone(),
            locks: HashSet::new(),
        })
    }

    /// A crash image in which part of the unsynced state survives, as it may on a real disk
    /// (writeback can persist any subset of dirty pages, and a journaling file system may
    /// commit directory changes that were never synced).
    ///
    /// With `keep_live_names` the image has the live namespace (every create, rename and
    /// removal survives) instead of the durable one. For each file,
    /// `tail(path, synced_len, unsynced)` is called once with the length of its synced prefix
    /// and the bytes after it, and returns the bytes that survive in their place (a prefix
    /// of them, or pages with zeros where pages were lost); anything longer than `unsynced`
    /// is cut to its length. A file is then at least as long as it was at its last sync
    /// (zeros after what survived), unless `keep_live_sizes`: sizes changed since (a log's
    /// cut reservation) survive too, as when the whole page cache was written back. With
    /// `false`, `false` and a `tail` that returns nothing this is
    /// [`MemFs::snapshot_durable`]. `self` is not changed.
    pub fn crash_image_with(
        &self,
        keep_live_names: bool,
        keep_live_sizes: bool,
        tail: &mut TailFn<'_>,
    ) -> MemFs {
        let state = self.shared.state.lock();
        let names = if keep_live_names {
            &state.live
        } else {
            &state.durable
        };
        let mut copies: HashMap<u64, InodeRef> = HashMap::new();
        let mut image = BTreeMap::new();
        for (path, ino) in names {
            let ino = ino.lock();
            let copy = copies.entry(ino.id).or_insert_with(|| {
                let synced = ino.synced_len.min(ino.data.len());
                let (kept, unsynced) = ino.data.split_at(synced);
                let mut data = kept.to_vec();
                let mut survived = tail(path, synced as u64, unsynced);
                survived.truncate(unsynced.len());
                data.extend_from_slice(&survived);
                if !keep_live_sizes && data.len() < ino.durable_len {
                    data.resize(ino.durable_len, 0);
                }
                let len = data.len();
                Arc::new(Mutex::new(Inode {
                    id: ino.id,
                    data,
                    synced_len: len,
                    durable_len: len,
                    reserved: 0,
                }))
            });
            image.insert(path.clone(), Arc::clone(copy));
        }
        MemFs::from_state(State {
            next_inode: state.next_inode,
            live: image.clone(),
            durable: image,
            dirs: state.dirs.clone(),
            locks: HashSet::new(),
        })
    }

    /// Every file path in the live namespace, sorted. For debugging and tests.
    pub fn file_names(&self) -> Vec<PathBuf> {
        self.shared.state.lock().live.keys().cloned().collect()
    }

    /// Every file path in the durable namespace (what a crash now would leave), sorted.
    pub fn durable_file_names(&self) -> Vec<PathBuf> {
        self.shared.state.lock().durable.keys().cloned().collect()
    }

    fn crashes(&self) -> u64 {
        self.shared.crashes.load(Ordering::SeqCst)
    }
}

impl MemFs {
    fn create_file(&self, path: &Path, log: bool) -> Result<MemWritableFile> {
        let mut state = self.shared.state.lock();
        state.check_parent("create", path)?;
        if state.dir_exists(path) {
            return Err(is_a_directory("create", path));
        }
        let inode = state.new_inode();
        if log {
            // Reserved from the start, as the POSIX backend's thread does.
            write_into(&mut inode.lock(), &[], true);
        }
        state.live.insert(path.to_path_buf(), Arc::clone(&inode));
        Ok(MemWritableFile {
            shared: Arc::clone(&self.shared),
            epoch: self.crashes(),
            inode,
            path: path.to_path_buf(),
            pending: Vec::new(),
            len: 0,
            log,
            finished: false,
        })
    }
}

impl FileSystem for MemFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        Ok(Box::new(self.create_file(path, false)?))
    }

    /// The inode stays the same one (a reopen is not a new file). Cutting bytes past `at`
    /// lowers the synced length, as a log's cut does: the cut is durable with the next sync,
    /// and until then a crash may leave zeros up to the size of the last sync.
    fn reopen(&self, path: &Path, at: u64) -> Result<Box<dyn WritableFile>> {
        let state = self.shared.state.lock();
        let inode = Arc::clone(state.live_file("reopen", path)?);
        {
            let mut ino = inode.lock();
            let end = ino.written_len();
            let at_len = usize::try_from(at).unwrap_or(usize::MAX);
            if end < at_len {
                return Err(io_error(
                    "reopen",
                    path,
                    io::ErrorKind::UnexpectedEof,
                    &format!("the file holds {end} bytes, fewer than the {at} to append after"),
                ));
            }
            ino.data.truncate(at_len);
            ino.reserved = 0;
            ino.synced_len = ino.synced_len.min(at_len);
        }
        Ok(Box::new(MemWritableFile {
            shared: Arc::clone(&self.shared),
            epoch: self.crashes(),
            inode,
            path: path.to_path_buf(),
            pending: Vec::new(),
            len: at,
            log: false,
            finished: false,
        }))
    }

    fn create_log(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        Ok(Box::new(self.create_file(path, true)?))
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let state = self.shared.state.lock();
        let inode = Arc::clone(state.live_file("open", path)?);
        let len = inode.lock().data.len() as u64;
        Ok(Arc::new(MemRandomAccessFile {
            shared: Arc::clone(&self.shared),
            epoch: self.crashes(),
            inode,
            path: path.to_path_buf(),
            len,
        }))
    }

    /// A directory renames with everything under it, to a name that is free or an empty
    /// directory, durably at once (directories are not modelled: see the module
    /// documentation).
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let mut state = self.shared.state.lock();
        if from.parent().is_some() && state.dirs.contains(from) {
            return state.rename_dir(from, to);
        }
        let inode = Arc::clone(state.live_file("rename", from)?);
        state.check_parent("rename", to)?;
        if state.dir_exists(to) {
            return Err(is_a_directory("rename", to));
        }
        state.live.remove(from);
        state.live.insert(to.to_path_buf(), inode);
        Ok(())
    }

    /// The same inode under a second name (durable with a `sync_dir` of its directory).
    fn hard_link(&self, from: &Path, to: &Path) -> Result<()> {
        let mut state = self.shared.state.lock();
        let inode = Arc::clone(state.live_file("hard link", from)?);
        state.check_parent("hard link", to)?;
        if state.live.contains_key(to) || state.dir_exists(to) {
            return Err(io_error(
                "hard link",
                to,
                io::ErrorKind::AlreadyExists,
                "the name exists",
            ));
        }
        state.live.insert(to.to_path_buf(), inode);
        Ok(())
    }

    /// Zeros the range's written bytes (the model has no blocks to free), in the live and
    /// the durable contents alike: the caller never reads the range again, so whether a
    /// crash kept the punch does not matter. A file with more than one live name is left
    /// alone, as the POSIX backend does.
    fn punch_hole(&self, path: &Path, offset: u64, len: u64) -> Result<bool> {
        let state = self.shared.state.lock();
        let inode = Arc::clone(state.live_file("punch hole", path)?);
        if state
            .live
            .values()
            .filter(|i| Arc::ptr_eq(i, &inode))
            .count()
            > 1
        {
            return Ok(false);
        }
        drop(state);
        #[cfg(test)]
        {
            let hook = self.shared.punch_hook.lock().clone();
            if let Some(hook) = hook {
                hook(path);
            }
        }
        let mut node = inode.lock();
        let end = usize::try_from(offset.saturating_add(len))
            .unwrap_or(usize::MAX)
            .min(node.data.len());
        let start = usize::try_from(offset).unwrap_or(usize::MAX).min(end);
        if let Some(range) = node.data.get_mut(start..end) {
            range.fill(0);
        }
        Ok(start < end)
    }

    fn remove_file(&self, path: &Path) -> Result<()> {
        let mut state = self.shared.state.lock();
        state.live_file("remove", path)?;
        state.live.remove(path);
        Ok(())
    }

    fn create_dir_all(&self, path: &Path) -> Result<()> {
        let mut state = self.shared.state.lock();
        let missing: Vec<&Path> = path
            .ancestors()
            .take_while(|a| !state.dir_exists(a))
            .collect();
        if let Some(file) = missing.iter().find(|a| state.live.contains_key(**a)) {
            return Err(io_error(
                "create directory",
                path,
                io::ErrorKind::AlreadyExists,
                &format!("{} is a file", file.display()),
            ));
        }
        for dir in missing {
            state.dirs.insert(dir.to_path_buf());
        }
        Ok(())
    }

    fn remove_dir(&self, path: &Path) -> Result<()> {
        let mut state = self.shared.state.lock();
        if path.parent().is_none() || !state.dirs.contains(path) {
            return Err(io_error(
                "remove directory",
                path,
                io::ErrorKind::NotFound,
                "no such directory",
            ));
        }
        let full = state
            .live
            .keys()
            .chain(state.dirs.iter())
            .any(|p| in_dir(p, path));
        if full {
            return Err(io_error(
                "remove directory",
                path,
                io::ErrorKind::DirectoryNotEmpty,
                "directory not empty",
            ));
        }
        state.dirs.remove(path);
        Ok(())
    }

    fn list_dir(&self, path: &Path) -> Result<Vec<String>> {
        let state = self.shared.state.lock();
        if !state.dir_exists(path) {
            return Err(if state.live.contains_key(path) {
                io_error(
                    "list directory",
                    path,
                    io::ErrorKind::NotADirectory,
                    "not a directory",
                )
            } else {
                io_error(
                    "list directory",
                    path,
                    io::ErrorKind::NotFound,
                    "no such directory",
                )
            });
        }
        let files = state.live.keys();
        let dirs = state.dirs.iter();
        Ok(files
            .chain(dirs)
            .filter(|p| in_dir(p, path))
            .filter_map(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .collect())
    }

    fn sync_dir(&self, path: &Path) -> Result<()> {
        let mut state = self.shared.state.lock();
        if !state.dir_exists(path) {
            return Err(io_error(
                "sync directory",
                path,
                io::ErrorKind::NotFound,
                "no such directory",
            ));
        }
        let State { live, durable, .. } = &mut *state;
        durable.retain(|p, _| !in_dir(p, path) || live.contains_key(p));
        for (p, ino) in live.iter().filter(|(p, _)| in_dir(p, path)) {
            durable.insert(p.clone(), Arc::clone(ino));
        }
        Ok(())
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        let state = self.shared.state.lock();
        Ok(state.live.contains_key(path) || state.dir_exists(path))
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        let state = self.shared.state.lock();
        let inode = state.live_file("stat", path)?;
        Ok(inode.lock().data.len() as u64)
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let mut state = self.shared.state.lock();
        state.check_parent("open lock file", path)?;
        if state.dir_exists(path) {
            return Err(is_a_directory("open lock file", path));
        }
        if state.locks.contains(path) {
            return Err(Error::Locked {
                path: path.to_path_buf(),
            });
        }
        if !state.live.contains_key(path) {
            // Locking creates the file, as opening LOCK with O_CREAT does.
            let inode = state.new_inode();
            state.live.insert(path.to_path_buf(), inode);
        }
        state.locks.insert(path.to_path_buf());
        Ok(Box::new(MemLock {
            shared: Arc::clone(&self.shared),
            path: path.to_path_buf(),
        }))
    }
}

/// A file being appended; bytes reach the inode on flush.
struct MemWritableFile {
    shared: Arc<Shared>,
    epoch: u64,
    inode: InodeRef,
    path: PathBuf,
    /// Appended but not yet flushed: lost if the handle's owner "dies" before flushing.
    pending: Vec<u8>,
    len: u64,
    /// Created by `create_log`: keeps zeros reserved after its flushed bytes.
    log: bool,
    /// Set by `finish`: appends are refused.
    finished: bool,
}

impl MemWritableFile {
    /// Run `f` on the inode if no crash happened since the handle was opened.
    fn with_inode<T>(&self, op: &'static str, f: impl FnOnce(&mut Inode) -> T) -> Result<T> {
        let mut ino = self.inode.lock();
        if self.shared.crashes.load(Ordering::SeqCst) != self.epoch {
            return Err(stale(op, &self.path));
        }
        Ok(f(&mut ino))
    }

    fn flush_pending(&mut self, op: &'static str) -> Result<()> {
        self.check_space(op)?;
        let pending = std::mem::take(&mut self.pending);
        let log = self.log && !self.finished;
        self.with_inode(op, |ino| write_into(ino, &pending, log))
    }

    /// Refuse to write the pending bytes (and a log's next reservation) past the file
    /// system's capacity; they stay pending.
    fn check_space(&self, op: &'static str) -> Result<()> {
        let capacity = self.shared.capacity.load(Ordering::SeqCst);
        if capacity == u64::MAX || self.pending.is_empty() {
            return Ok(());
        }
        let (held, written) = self.with_inode(op, |ino| (ino.data.len(), ino.written_len()))?;
        let reserve = if self.log && !self.finished {
            LOG_RESERVE
        } else {
            0
        };
        let after = written + self.pending.len() + reserve;
        let grow = after.saturating_sub(held) as u64;
        if self.shared.used().saturating_add(grow) > capacity {
            return Err(io_error(
                op,
                &self.path,
                io::ErrorKind::StorageFull,
                "no space left on device",
            ));
        }
        Ok(())
    }

    /// Cut a log's reserved zeros off.
    fn release_reservation(&mut self, op: &'static str) -> Result<()> {
        if !self.log {
            return Ok(());
        }
        self.with_inode(op, |ino| {
            let end = ino.written_len();
            ino.data.truncate(end);
            ino.reserved = 0;
            ino.synced_len = ino.synced_len.min(end);
            // Not `durable_len`: the cut is durable only with the next sync.
        })
    }
}

/// Write flushed bytes over the reservation (a log's zeros) or at the end, and reserve zeros
/// after them again when `log`.
fn write_into(ino: &mut Inode, bytes: &[u8], log: bool) {
    let end = ino.written_len();
    ino.data.truncate(end);
    ino.data.extend_from_slice(bytes);
    ino.reserved = 0;
    if log {
        let len = ino.data.len();
        let reserved = LOG_RESERVE - len % LOG_RESERVE;
        ino.data.resize(len + reserved, 0);
        ino.reserved = reserved;
    }
}

impl WritableFile for MemWritableFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.with_inode("write", |_| ())?;
        if self.finished {
            return Err(io_error(
                "write",
                &self.path,
                io::ErrorKind::Other,
                "append after finish",
            ));
        }
        self.pending.extend_from_slice(data);
        self.len += data.len() as u64;
        if self.pending.len() > WRITE_BUFFER {
            self.flush_pending("write")?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.flush_pending("flush")
    }

    fn sync(&mut self) -> Result<()> {
        self.check_space("sync")?;
        let pending = std::mem::take(&mut self.pending);
        let log = self.log && !self.finished;
        self.with_inode("sync", |ino| {
            if !pending.is_empty() {
                write_into(ino, &pending, log);
            }
            ino.synced_len = ino.written_len();
            ino.durable_len = ino.data.len();
        })
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn finish(&mut self) -> Result<()> {
        self.flush_pending("flush")?;
        self.finished = true;
        self.release_reservation("flush")
    }

    fn syncer(&self) -> Option<Arc<dyn FileSyncer>> {
        Some(Arc::new(MemSyncer {
            shared: Arc::clone(&self.shared),
            epoch: self.epoch,
            inode: self.inode.clone(),
            path: self.path.clone(),
        }))
    }
}

/// Syncs an inode's flushed bytes, as `fdatasync` on a second descriptor does: bytes still
/// pending in the appending handle are not covered.
struct MemSyncer {
    shared: Arc<Shared>,
    epoch: u64,
    inode: InodeRef,
    path: PathBuf,
}

impl FileSyncer for MemSyncer {
    fn sync_data(&self) -> Result<()> {
        let mut ino = self.inode.lock();
        if self.shared.crashes.load(Ordering::SeqCst) != self.epoch {
            return Err(stale("sync", &self.path));
        }
        ino.synced_len = ino.written_len();
        ino.durable_len = ino.data.len();
        Ok(())
    }
}

impl Drop for MemWritableFile {
    fn drop(&mut self) {
        // Closing hands buffered bytes to the "OS", as the POSIX backend does. A stale handle
        // has nowhere to put them.
        if !self.pending.is_empty() {
            let _ = self.flush_pending("close");
        }
        let _ = self.release_reservation("close");
    }
}

/// A read handle: keeps reading the inode it opened, whatever happens to its name.
struct MemRandomAccessFile {
    shared: Arc<Shared>,
    epoch: u64,
    inode: InodeRef,
    path: PathBuf,
    len: u64,
}

impl RandomAccessFile for MemRandomAccessFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let ino = self.inode.lock();
        if self.shared.crashes.load(Ordering::SeqCst) != self.epoch {
            return Err(stale("read", &self.path));
        }
        let src = usize::try_from(offset)
            .ok()
            .and_then(|start| ino.data.get(start..start.checked_add(buf.len())?));
        match src {
            Some(src) => {
                buf.copy_from_slice(src);
                Ok(())
            }
            None => Err(io_error(
                "read",
                &self.path,
                io::ErrorKind::UnexpectedEof,
                &format!(
                    "read of {} bytes at offset {offset} runs past the end of the {}-byte file",
                    buf.len(),
                    ino.data.len()
                ),
            )),
        }
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn advise(&self, access: super::Access) {
        self.shared.advice.lock().push((self.path.clone(), access));
    }
}

/// A held lock on a path of one [`MemFs`].
struct MemLock {
    shared: Arc<Shared>,
    path: PathBuf,
}

impl fmt::Debug for MemLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemLock").field("path", &self.path).finish()
    }
}

impl FileLock for MemLock {}

impl Drop for MemLock {
    fn drop(&mut self) {
        self.shared.state.lock().locks.remove(&self.path);
    }
}

#[cfg(test)]
mod tests;
