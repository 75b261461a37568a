//! The real file system, over `std::fs`.
//!
//! Writable files keep a user-space buffer so that the many small appends of a table or
//! log builder become few system calls; [`WritableFile::flush`] hands the buffer to the
//! kernel and [`WritableFile::sync`] additionally calls `fdatasync`. Reads are positioned
//! (`pread`), so one open file serves any number of threads without a seek position; a
//! file opened with [`FileSystem::open_mapped`] (a table or a sealed value-log segment, with
//! `Options::mmap_reads`) is read from a read-only memory map instead, at most
//! [`MAX_MAPPED_FILES`] at once per process: a table's map (`memmap2::Mmap`, created in
//! `map_immutable`) lends its blocks with no copy; a segment's (`memmap2::MmapRaw`) is read
//! by copying a record's range out in `PosixRawMappedFile::copy_out`. With those, the copy
//! of a log append into a writable map (`LogMap::copy_in`, below) is the workspace's third
//! and last `unsafe` block (`UNSAFE.md`).
//!
//! Log files ([`FileSystem::create_log`]) write through the same buffer, and on Linux a
//! background thread per log keeps space reserved ahead of the appends (`fallocate`, which
//! extends the file with zeros) and pulls those zero pages into the page cache
//! (`fadvise(WILLNEED)`): an append then copies into cached pages instead of allocating a
//! page, zeroing it and growing the file, which took about a quarter of the value-log
//! writer's time (`docs/env.md`, `docs/designs/wisckey.md` session 7). The reservation is
//! cut off by [`WritableFile::finish`] or the drop; a crash leaves it as a zero-filled tail.
//! With [`FileSystem::create_mapped_log`] (`Options::mmap_log_writes`) an append of less
//! than [`MAPPED_APPEND_MAX`] bytes inside the reservation is copied into a writable map of
//! the file ([`LogMap`]) instead of written with a system call; other appends use `pwrite`
//! at the log's end.
//!
//! Thread-safety: [`PosixFs`] and its random-access files are shared freely; a writable file
//! has one owner.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::{FileLock, FileSyncer, FileSystem, MapUse, RandomAccessFile, WritableFile};
use crate::error::{Error, Result};

/// Appends smaller than this are gathered in user space; larger ones go straight to the OS.
const WRITE_BUFFER: usize = 64 * 1024;

/// How far past the bytes handed to the OS a log keeps space reserved and cached.
#[cfg(target_os = "linux")]
const LOG_RESERVE_AHEAD: u64 = 8 << 20;

/// The reservation grows by this much per `fallocate`.
#[cfg(target_os = "linux")]
const LOG_RESERVE_STEP: u64 = 1 << 20;

/// How far ahead of `written` bytes a log keeps reserved: one step while the log is small,
/// growing with it to [`LOG_RESERVE_AHEAD`]. A log that stays small (the WAL of a small
/// memtable, switched every few hundred KiB) then does not reserve and cache 8 MiB of
/// zeros for each file.
#[cfg(target_os = "linux")]
fn reserve_ahead(written: u64) -> u64 {
    written.clamp(LOG_RESERVE_STEP, LOG_RESERVE_AHEAD)
}

/// `fadvise(WILLNEED)` is asked for this much at a time: the kernel caps one call at the
/// file's readahead window (128 KiB by default).
#[cfg(target_os = "linux")]
const LOG_READAHEAD_PIECE: u64 = 128 << 10;

/// Spare capacity past a read's length that `read_append` lets `pread` fill (and then
/// drops); a buffer with more is read into zeroed room of the read's length instead.
const READ_APPEND_SLACK: usize = 4096;

/// Files the process keeps memory-mapped at once ([`FileSystem::open_mapped`]), over every
/// store: LevelDB's limit (`kDefaultMmapLimit`, 1000 on 64-bit systems). Past it, tables
/// are opened for `pread` (LevelDB's fallback too), so a store with more tables than this
/// never runs the process out of map areas (`vm.max_map_count`, 65530 by default).
pub const MAX_MAPPED_FILES: usize = 1000;

/// A budget of memory-mapped files: how many may be mapped at once and how many are.
#[derive(Debug)]
struct MapLimit {
    limit: usize,
    mapped: AtomicUsize,
}

impl MapLimit {
    const fn new(limit: usize) -> MapLimit {
        MapLimit {
            limit,
            mapped: AtomicUsize::new(0),
        }
    }

    /// Take one map from the budget; false when it is spent.
    fn take(&self) -> bool {
        self.mapped
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.limit).then_some(n + 1)
            })
            .is_ok()
    }

    fn give_back(&self) {
        self.mapped.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The budget every [`PosixFs`] shares unless made with [`PosixFs::with_map_limit`].
static PROCESS_MAPS: MapLimit = MapLimit::new(MAX_MAPPED_FILES);

/// The operating system's file system.
#[derive(Clone, Debug, Default)]
pub struct PosixFs {
    /// The budget of mapped files; `None` for the process-wide one ([`MAX_MAPPED_FILES`]).
    maps: Option<Arc<MapLimit>>,
}

impl PosixFs {
    /// The real file system. Every instance shares the process's budget of mapped files
    /// ([`MAX_MAPPED_FILES`]).
    pub fn new() -> PosixFs {
        PosixFs::default()
    }

    /// The real file system with a budget of its own: at most `limit` files mapped at once
    /// through this instance (and its clones); `0` maps none.
    pub fn with_map_limit(limit: usize) -> PosixFs {
        PosixFs {
            maps: Some(Arc::new(MapLimit::new(limit))),
        }
    }

    /// Files mapped through this instance's budget now (the process-wide count for
    /// [`PosixFs::new`]).
    pub fn mapped_files(&self) -> usize {
        self.maps().mapped.load(Ordering::Acquire)
    }

    fn maps(&self) -> &MapLimit {
        self.maps.as_deref().unwrap_or(&PROCESS_MAPS)
    }
}

/// `path` opened for reading, with its size; a directory is refused.
fn open_for_reads(path: &Path) -> Result<(File, u64)> {
    let file = File::open(path).map_err(|e| Error::io("open", path, e))?;
    let meta = file.metadata().map_err(|e| Error::io("open", path, e))?;
    if meta.is_dir() {
        return Err(Error::io(
            "open",
            path,
            io::Error::new(io::ErrorKind::IsADirectory, "is a directory, not a file"),
        ));
    }
    Ok((file, meta.len()))
}

impl FileSystem for PosixFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        Ok(Box::new(PosixWritableFile::create(path)?))
    }

    #[cfg(target_os = "linux")]
    fn create_log(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        Ok(Box::new(PosixWritableFile::create_log(path, false)?))
    }

    /// A log whose appends shorter than [`MAPPED_APPEND_MAX`] are copied into a writable
    /// map of its reserved space ([`LogMap`]); the rest as [`FileSystem::create_log`].
    #[cfg(target_os = "linux")]
    fn create_mapped_log(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        Ok(Box::new(PosixWritableFile::create_log(path, true)?))
    }

    fn reopen(&self, path: &Path, at: u64) -> Result<Box<dyn WritableFile>> {
        Ok(Box::new(PosixWritableFile::reopen(path, at)?))
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let (file, len) = open_for_reads(path)?;
        Ok(Arc::new(PosixRandomAccessFile {
            file,
            path: path.to_path_buf(),
            len,
        }))
    }

    /// A read-only shared map of the file's first `len` bytes (or all of a shorter file),
    /// lending ranges ([`MapUse::Immutable`]) or copying them ([`MapUse::Punchable`]). An
    /// empty file, a spent budget ([`MAX_MAPPED_FILES`]) or a failed `mmap` (no address
    /// space, too many map areas) opens the file for `pread` instead, as
    /// [`FileSystem::open`] does.
    #[cfg(target_os = "linux")]
    fn open_mapped(
        &self,
        path: &Path,
        len: u64,
        map_use: MapUse,
    ) -> Result<Arc<dyn RandomAccessFile>> {
        let (file, file_len) = open_for_reads(path)?;
        let map_len = usize::try_from(len.min(file_len)).unwrap_or(0);
        if map_len > 0 && self.maps().take() {
            let slot = MapSlot(self.maps.clone());
            let path = path.to_path_buf();
            match map_use {
                MapUse::Immutable => {
                    if let Ok(map) = map_immutable(&file, map_len) {
                        return Ok(Arc::new(PosixMappedFile {
                            map: bytes::Bytes::from_owner(MapOwner { map, _slot: slot }),
                            path,
                        }));
                    }
                }
                MapUse::Punchable => {
                    if let Ok(map) = map_raw(&file, map_len) {
                        return Ok(Arc::new(PosixRawMappedFile {
                            map,
                            path,
                            _slot: slot,
                        }));
                    }
                }
            }
        }
        Ok(Arc::new(PosixRandomAccessFile {
            file,
            path: path.to_path_buf(),
            len: file_len,
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        fs::rename(from, to).map_err(|e| {
            // The message names both ends; the error's path is the source, which is the
            // one that usually does not exist when a rename fails.
            Error::io(
                "rename",
                from,
                io::Error::new(e.kind(), format!("to {}: {e}", to.display())),
            )
        })
    }

    fn remove_file(&self, path: &Path) -> Result<()> {
        fs::remove_file(path).map_err(|e| Error::io("remove", path, e))
    }

    fn create_dir_all(&self, path: &Path) -> Result<()> {
        fs::create_dir_all(path).map_err(|e| Error::io("create directory", path, e))
    }

    fn remove_dir(&self, path: &Path) -> Result<()> {
        fs::remove_dir(path).map_err(|e| Error::io("remove directory", path, e))
    }

    fn list_dir(&self, path: &Path) -> Result<Vec<String>> {
        let entries = fs::read_dir(path).map_err(|e| Error::io("list directory", path, e))?;
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| Error::io("list directory", path, e))?;
            // A name that is not UTF-8 cannot be one of the store's files; keep it visible
            // (lossily) rather than hiding it from a listing.
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        Ok(names)
    }

    fn sync_dir(&self, path: &Path) -> Result<()> {
        let dir = File::open(path).map_err(|e| Error::io("open directory", path, e))?;
        dir.sync_all()
            .map_err(|e| Error::io("sync directory", path, e))
    }

    fn hard_link(&self, from: &Path, to: &Path) -> Result<()> {
        fs::hard_link(from, to).map_err(|e| {
            Error::io(
                "hard link",
                from,
                io::Error::new(e.kind(), format!("to {}: {e}", to.display())),
            )
        })
    }

    #[cfg(target_os = "linux")]
    fn punch_hole(&self, path: &Path, offset: u64, len: u64) -> Result<bool> {
        use std::os::unix::fs::MetadataExt;
        if len == 0 {
            return Ok(false);
        }
        let file = fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| Error::io("open for punching", path, e))?;
        let meta = file
            .metadata()
            .map_err(|e| Error::io("punch hole", path, e))?;
        // A second name (a checkpoint's hard link) shares the blocks: punching them would
        // change that copy's bytes too.
        if meta.nlink() > 1 {
            return Ok(false);
        }
        let flags = rustix::fs::FallocateFlags::PUNCH_HOLE | rustix::fs::FallocateFlags::KEEP_SIZE;
        loop {
            match rustix::fs::fallocate(&file, flags, offset, len) {
                Ok(()) => return Ok(true),
                Err(rustix::io::Errno::INTR) => {}
                // The file system has no hole punching: nothing is freed, nothing is wrong.
                Err(rustix::io::Errno::OPNOTSUPP | rustix::io::Errno::NOSYS) => return Ok(false),
                Err(e) => return Err(Error::io("punch hole", path, e.into())),
            }
        }
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        path.try_exists().map_err(|e| Error::io("stat", path, e))
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        fs::metadata(path)
            .map(|m| m.len())
            .map_err(|e| Error::io("stat", path, e))
    }

    /// Two `flock`s, both exclusive and both held until the guard drops: one on the store
    /// directory itself (an open file description of the directory, which Linux lets
    /// `flock`), then one on the lock file. The lock file alone is not enough: a process
    /// that finds it deleted creates a new one and locks that (issue 17, case 7). Deleting
    /// a file does not touch the directory's lock, so it holds; the lock file keeps
    /// excluding versions of Shale that lock only it. Where the directory cannot be locked
    /// (a file system that refuses `flock` on a directory, or a directory this process may
    /// not open), the lock file's lock is the only one and [`FileLock::check`] refuses to
    /// go on once that file is gone.
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let dir_lock = match File::open(dir) {
            Ok(d) => match d.try_lock() {
                Ok(()) => Some(d),
                Err(TryLockError::WouldBlock) => {
                    return Err(Error::Locked {
                        path: path.to_path_buf(),
                    });
                }
                // No directory locks on this file system: the lock file has to do.
                Err(TryLockError::Error(_)) => None,
            },
            // A directory this process may not open for reading: the same.
            Err(_) => None,
        };
        let file = lock_file(path)?;
        let id = file_id(&file).map_err(|e| Error::io("stat lock file", path, e))?;
        Ok(Box::new(PosixLock {
            file: parking_lot::Mutex::new((file, id)),
            dir: dir_lock,
            path: path.to_path_buf(),
        }))
    }
}

/// Open (creating) and `flock` the lock file at `path`.
fn lock_file(path: &Path) -> Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| Error::io("open lock file", path, e))?;
    // flock semantics: the lock belongs to this open file description, so a second
    // handle in the same process is refused too, which is what keeps two `Db`s in one
    // process off the same directory.
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => Err(Error::Locked {
            path: path.to_path_buf(),
        }),
        Err(TryLockError::Error(e)) => Err(Error::io("lock", path, e)),
    }
}

/// A file's identity: device and inode.
fn file_id(file: &File) -> io::Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let m = file.metadata()?;
    Ok((m.dev(), m.ino()))
}

/// A file opened for appending, with a user-space buffer.
struct PosixWritableFile {
    file: File,
    path: PathBuf,
    buf: Vec<u8>,
    /// Bytes appended, buffered or not.
    len: u64,
    /// Bytes handed to the OS.
    written: u64,
    /// Set by `finish`: appends are refused.
    finished: bool,
    /// A log's space reservation ahead of `written`.
    #[cfg(target_os = "linux")]
    reserver: Option<Reserver>,
    /// Copy small appends into [`PosixWritableFile::map`] ([`FileSystem::create_mapped_log`]).
    #[cfg(target_os = "linux")]
    map_appends: bool,
    /// A log's writable map of the reserved bytes after `written` (see [`LogMap`]).
    #[cfg(target_os = "linux")]
    map: Option<LogMap>,
    /// Appends copied into the map.
    #[cfg(target_os = "linux")]
    mapped_appends: u64,
    /// `written` at the last sync.
    #[cfg(target_os = "linux")]
    synced: u64,
}

impl PosixWritableFile {
    fn create(path: &Path) -> Result<PosixWritableFile> {
        // Readable too: a log's writable map needs a descriptor open for reading.
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| Error::io("create", path, e))?;
        Ok(PosixWritableFile::appending_at(file, path, 0))
    }

    /// A handle appending to `file` after its first `at` bytes (the file ends there): no
    /// reservation, no map.
    fn appending_at(file: File, path: &Path, at: u64) -> PosixWritableFile {
        PosixWritableFile {
            file,
            path: path.to_path_buf(),
            buf: Vec::with_capacity(WRITE_BUFFER),
            len: at,
            written: at,
            finished: false,
            #[cfg(target_os = "linux")]
            reserver: None,
            #[cfg(target_os = "linux")]
            map_appends: false,
            #[cfg(target_os = "linux")]
            map: None,
            #[cfg(target_os = "linux")]
            mapped_appends: 0,
            #[cfg(target_os = "linux")]
            synced: at,
        }
    }

    /// A log file: space reserved ahead of the writer by a thread of its own ([`Reserver`];
    /// without one, which could not be started, the log is a plain file), and its small
    /// appends copied into a map of that space when `mapped`.
    #[cfg(target_os = "linux")]
    fn create_log(path: &Path, mapped: bool) -> Result<PosixWritableFile> {
        let mut f = PosixWritableFile::create(path)?;
        f.reserver = Reserver::start(&f.file, path);
        f.map_appends = mapped && f.reserver.is_some();
        Ok(f)
    }

    fn reopen(path: &Path, at: u64) -> Result<PosixWritableFile> {
        let file = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| Error::io("reopen", path, e))?;
        let size = file
            .metadata()
            .map_err(|e| Error::io("reopen", path, e))?
            .len();
        if size < at {
            return Err(Error::io(
                "reopen",
                path,
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("the file holds {size} bytes, fewer than the {at} to append after"),
                ),
            ));
        }
        if size > at {
            file.set_len(at)
                .map_err(|e| Error::io("truncate", path, e))?;
        }
        // Appends write at `written` (`pwrite`), not at the descriptor's offset.
        Ok(PosixWritableFile::appending_at(file, path, at))
    }

    fn write_out(&mut self, data: &[u8]) -> Result<()> {
        #[cfg(target_os = "linux")]
        if self.copy_to_map(data) {
            return Ok(());
        }
        // At `written`, not at the descriptor's offset: appends copied into the map do not
        // move it.
        self.file
            .write_all_at(data, self.written)
            .map_err(|e| Error::io("write", &self.path, e))?;
        self.written += data.len() as u64;
        #[cfg(target_os = "linux")]
        if let Some(r) = &self.reserver {
            r.wrote(self.written);
        }
        Ok(())
    }

    /// Stop the reservation and cut the file at the bytes handed to the OS. The reserver is
    /// forgotten only once the cut succeeded, so a failed one is tried again by the next
    /// `finish` (or the drop).
    fn release_reservation(&mut self) -> Result<()> {
        #[cfg(target_os = "linux")]
        if let Some(r) = self.reserver.as_mut() {
            r.stop();
            // Unmapped before the cut: no page of the map is ever past the file's end.
            self.map = None;
            self.file
                .set_len(self.written)
                .map_err(|e| Error::io("truncate", &self.path, e))?;
            self.reserver = None;
        }
        Ok(())
    }

    /// Copy `data` into the log's map at `written`, if it is a small append (under
    /// [`MAPPED_APPEND_MAX`]) and lies inside the reserved bytes; false (nothing done) to
    /// have it written with `pwrite` instead. A window that cannot be mapped ends the
    /// mapped appends of this file.
    #[cfg(target_os = "linux")]
    fn copy_to_map(&mut self, data: &[u8]) -> bool {
        use std::sync::atomic::Ordering;
        if !self.map_appends || data.len() >= MAPPED_APPEND_MAX {
            return false;
        }
        let Some(r) = &self.reserver else {
            return false;
        };
        let end = self.written + data.len() as u64;
        // The reservation only grows while the writer appends (it is cut by `finish`
        // and the drop, after the thread stopped), and the file extends over it.
        if end > r.shared.reserved.load(Ordering::Acquire) {
            return false;
        }
        if !self
            .map
            .as_ref()
            .is_some_and(|m| m.covers(self.written, end))
        {
            // The old window is unmapped first: one window per log at a time.
            self.map = None;
            self.map = LogMap::new(&self.file, self.written);
            if self.map.is_none() {
                self.map_appends = false;
                return false;
            }
        }
        if !self
            .map
            .as_ref()
            .is_some_and(|m| m.copy_in(self.written, data))
        {
            return false;
        }
        self.mapped_appends += 1;
        self.written = end;
        r.wrote(end);
        true
    }

    fn flush_buffer(&mut self) -> Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let buf = std::mem::take(&mut self.buf);
        let res = self.write_out(&buf);
        // Keep the allocation; on failure the bytes are dropped, because a partial
        // write leaves the file in an unknown state and the caller must give up on it.
        self.buf = buf;
        self.buf.clear();
        res
    }
}

impl WritableFile for PosixWritableFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        if self.finished {
            return Err(Error::io(
                "write",
                &self.path,
                io::Error::other("append after finish"),
            ));
        }
        if self.buf.len() + data.len() <= WRITE_BUFFER {
            self.buf.extend_from_slice(data);
        } else {
            self.flush_buffer()?;
            if data.len() < WRITE_BUFFER {
                self.buf.extend_from_slice(data);
            } else {
                // Copying a large append into the buffer would only double the work.
                self.write_out(data)?;
            }
        }
        self.len += data.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.flush_buffer()
    }

    /// With nothing buffered, `data` goes straight to the file (one `write(2)`, as append
    /// then flush would make), without the copy into the buffer.
    fn append_and_flush(&mut self, data: &[u8]) -> std::result::Result<(), (&'static str, Error)> {
        if self.finished || !self.buf.is_empty() {
            self.append(data).map_err(|e| ("append", e))?;
            return self.flush().map_err(|e| ("flush", e));
        }
        self.len += data.len() as u64;
        self.write_out(data).map_err(|e| ("flush", e))
    }

    fn sync(&mut self) -> Result<()> {
        self.flush_buffer()?;
        // Writeback write-protects every page it cleans in every map of it (a TLB flush,
        // with an interrupt to the other cores, per page): for a map with many pages
        // dirtied since the last sync, unmapping first (one flush for the whole window)
        // costs far less. Dirty pages stay dirty in the page cache; the next small append
        // maps a new window.
        #[cfg(target_os = "linux")]
        if self.map.is_some() && self.written - self.synced >= UNMAP_BEFORE_SYNC {
            self.map = None;
        }
        self.file
            .sync_data()
            .map_err(|e| Error::io("sync", &self.path, e))?;
        #[cfg(target_os = "linux")]
        {
            self.synced = self.written;
        }
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn finish(&mut self) -> Result<()> {
        self.flush_buffer()?;
        self.finished = true;
        self.release_reservation()
    }

    fn syncer(&self) -> Option<Arc<dyn FileSyncer>> {
        // fdatasync through any descriptor of the inode covers every byte written through
        // any other; a duplicate that fails to open only loses the optimisation.
        let file = self.file.try_clone().ok()?;
        Some(Arc::new(PosixSyncer {
            file,
            path: self.path.clone(),
        }))
    }
}

/// A duplicate descriptor of a file being appended, used only to sync it.
struct PosixSyncer {
    file: File,
    path: PathBuf,
}

impl FileSyncer for PosixSyncer {
    fn sync_data(&self) -> Result<()> {
        self.file
            .sync_data()
            .map_err(|e| Error::io("sync", &self.path, e))
    }
}

impl Drop for PosixWritableFile {
    fn drop(&mut self) {
        // Like closing a stdio stream: buffered bytes reach the OS even if the owner forgot
        // to flush. Errors cannot be reported here; anyone who cares calls flush or sync (or
        // finish, for a log: a log dropped without it may keep its zero-filled reservation,
        // which its readers take for its end).
        let _ = self.flush_buffer();
        let _ = self.release_reservation();
    }
}

/// Keeps a log's space reserved and its pages cached ahead of the writer, from a thread of
/// its own: the thread `fallocate`s the next [`LOG_RESERVE_STEP`] bytes (which extends the
/// file with zeros) and asks for them to be read into the page cache (`fadvise(WILLNEED)`
/// reads zeros of an unwritten extent without any I/O), until it is [`reserve_ahead`] past
/// the writer (one step for a small log, up to [`LOG_RESERVE_AHEAD`]); then it parks until
/// the writer comes within half of that.
///
/// Neither call changes a byte the writer wrote (`fallocate` without flags only allocates,
/// and readahead skips cached pages), so the two need no coordination: if the thread falls
/// behind, appends simply allocate pages themselves (and the thread skips ahead of them).
/// A failed `fallocate` ends the thread: without space the appends then fail and report it;
/// on a file system without `fallocate` they work as before.
#[cfg(target_os = "linux")]
struct Reserver {
    shared: Arc<ReserveShared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

#[cfg(target_os = "linux")]
#[derive(Default)]
struct ReserveShared {
    /// Bytes the writer has handed to the OS.
    written: std::sync::atomic::AtomicU64,
    /// Where the reservation ends.
    reserved: std::sync::atomic::AtomicU64,
    stop: std::sync::atomic::AtomicBool,
}

#[cfg(target_os = "linux")]
impl Reserver {
    /// Start the thread for `file`; `None` if a descriptor or thread cannot be had.
    fn start(file: &File, path: &Path) -> Option<Reserver> {
        use std::sync::atomic::Ordering;
        let fd = file.try_clone().ok()?;
        let shared = Arc::new(ReserveShared::default());
        let s = Arc::clone(&shared);
        let name = path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let thread = std::thread::Builder::new()
            // Linux keeps 15 bytes of a thread name: "rsv 000012.vlog".
            .name(format!("rsv {name}"))
            .spawn(move || {
                let mut at = 0u64;
                while !s.stop.load(Ordering::Acquire) {
                    let written = s.written.load(Ordering::Acquire);
                    // A writer that got ahead has allocated its pages itself: start past it.
                    at = at.max(written / LOG_RESERVE_STEP * LOG_RESERVE_STEP);
                    if at >= written + reserve_ahead(written) {
                        // `wrote` unparks; a wake-up that comes first is kept as a token.
                        std::thread::park();
                        continue;
                    }
                    let reserved = loop {
                        match rustix::fs::fallocate(
                            &fd,
                            rustix::fs::FallocateFlags::empty(),
                            at,
                            LOG_RESERVE_STEP,
                        ) {
                            Err(rustix::io::Errno::INTR) => continue,
                            r => break r.is_ok(),
                        }
                    };
                    if !reserved {
                        return;
                    }
                    // Only a hint: pages it does not bring in are allocated by the appends.
                    // The kernel reads at most the readahead window per call.
                    let mut piece = at;
                    while piece < at + LOG_RESERVE_STEP {
                        let _ = rustix::fs::fadvise(
                            &fd,
                            piece,
                            std::num::NonZeroU64::new(LOG_READAHEAD_PIECE),
                            rustix::fs::Advice::WillNeed,
                        );
                        piece += LOG_READAHEAD_PIECE;
                    }
                    at += LOG_RESERVE_STEP;
                    s.reserved.store(at, Ordering::Release);
                }
            })
            .ok()?;
        Some(Reserver {
            shared,
            thread: Some(thread),
        })
    }

    /// The writer has handed `written` bytes to the OS.
    fn wrote(&self, written: u64) {
        use std::sync::atomic::Ordering;
        self.shared.written.store(written, Ordering::Release);
        if written + reserve_ahead(written) / 2 > self.shared.reserved.load(Ordering::Acquire)
            && let Some(t) = &self.thread
        {
            t.thread().unpark();
        }
    }

    /// Stop the thread and wait for it (at most one `fallocate` and one `fadvise` of
    /// [`LOG_RESERVE_STEP`] bytes in flight).
    fn stop(&mut self) {
        self.shared
            .stop
            .store(true, std::sync::atomic::Ordering::Release);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

#[cfg(target_os = "linux")]
impl Drop for Reserver {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Appends shorter than this are copied into a log's writable map ([`LogMap`]); longer
/// ones are written with `pwrite`. Measured (session 23): a small `write(2)` into cached
/// pages costs about 0.6 us where a copy into the map costs a page fault per 4 KiB page
/// spread over the appends that fill it. A C loop alone broke even near 2 KiB; whole
/// `leveldb` fills, with flushes and compactions mapping tables beside the writer, gained
/// 12-16 % with 256-byte values, 0-13 % with 512, and lost 8-19 % with 1 KiB and 16-23 % with
/// 1.5 KiB (`docs/env.md`).
#[cfg(target_os = "linux")]
const MAPPED_APPEND_MAX: usize = 512;

/// A sync drops a log's map first when at least this much was written since the last sync
/// (see `PosixWritableFile::sync`); a sync after a few appends keeps it.
#[cfg(target_os = "linux")]
const UNMAP_BEFORE_SYNC: u64 = 1 << 20;

/// Bytes of a log a [`LogMap`] spans; a copy past its end maps the next window.
#[cfg(target_os = "linux")]
const LOG_MAP_WINDOW: usize = 32 << 20;

/// A writable shared map of a window of a log file, for appends copied into the page cache
/// without a system call. Only bytes the log's [`Reserver`] has allocated (the file extends
/// over them) and that no reader reads yet (after the bytes handed to the OS) are written
/// through it.
#[cfg(target_os = "linux")]
struct LogMap {
    map: memmap2::MmapRaw,
    /// The file offset of the map's first byte.
    base: u64,
}

#[cfg(target_os = "linux")]
impl LogMap {
    /// A map of [`LOG_MAP_WINDOW`] bytes from `at` (`memmap2` maps from the page holding
    /// it); `None` if `mmap` fails.
    fn new(file: &File, at: u64) -> Option<LogMap> {
        let base = at;
        let map = memmap2::MmapOptions::new()
            .offset(base)
            .len(LOG_MAP_WINDOW)
            .map_raw(file)
            .ok()?;
        Some(LogMap { map, base })
    }

    /// Whether the file's bytes `from..to` lie inside the map.
    fn covers(&self, from: u64, to: u64) -> bool {
        from >= self.base && to <= self.base + self.map.len() as u64
    }

    /// Copy `data` to the file's offset `at`; false (nothing copied) unless the bytes lie
    /// inside the map.
    #[allow(unsafe_code)]
    fn copy_in(&self, at: u64, data: &[u8]) -> bool {
        let Some(start) = at
            .checked_sub(self.base)
            .and_then(|d| usize::try_from(d).ok())
            .filter(|s| {
                s.checked_add(data.len())
                    .is_some_and(|e| e <= self.map.len())
            })
        else {
            return false;
        };
        // SAFETY: `start..start + data.len()` lies inside the map (checked just above),
        // which is valid for writes: a shared read-write mapping this struct owns for
        // `map.len()` bytes, so every `dst.add(i)` below, `i < data.len()`, is in it, and
        // so is each 8-byte store at `i + 8 <= data.len()` (`[u8; 8]` has alignment 1, so
        // any address is aligned for it). No Rust reference to the mapped bytes exists
        // (`MmapRaw` hands out only raw pointers), and no Shale reader reads these bytes
        // while they are copied: a log is read only below the end its writer has
        // published, and the caller copies at and after `written`, its end. The pages are
        // in the file: the caller copies only below the reservation, which `fallocate`
        // has added to the file, so a store faults in a page of the file and never one
        // past its end (which would be `SIGBUS`). The source is not in the map.
        //
        // The stores are volatile and in address order, 8 bytes at a time, rather than one
        // `copy_nonoverlapping`: `memcpy` may store a buffer's end before its start, and a
        // process killed in the middle would then leave the end of a record (say the last
        // fragment of a WAL record, in the next log block) without its start, which the
        // log's readers take for damage followed by a valid record. In order, a copy cut
        // short leaves a prefix of the append, as a `write(2)` cut short does: a torn tail.
        unsafe {
            let dst = self.map.as_mut_ptr().add(start);
            let mut words = data.chunks_exact(8);
            let mut i = 0;
            for w in &mut words {
                let mut word = [0u8; 8];
                word.copy_from_slice(w);
                std::ptr::write_volatile(dst.add(i).cast::<[u8; 8]>(), word);
                i += 8;
            }
            for &b in words.remainder() {
                std::ptr::write_volatile(dst.add(i), b);
                i += 1;
            }
        }
        true
    }
}

/// A file read with positioned reads.
struct PosixRandomAccessFile {
    file: File,
    path: PathBuf,
    len: u64,
}

/// The error of a read of `len` bytes at `offset` of `path` that failed with `e`; a read
/// past the end of the file says so.
fn read_error(path: &Path, e: io::Error, len: usize, offset: u64) -> Error {
    let e = if e.kind() == io::ErrorKind::UnexpectedEof {
        io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("read of {len} bytes at offset {offset} runs past the end of the file"),
        )
    } else {
        e
    };
    Error::io("read", path, e)
}

impl PosixRandomAccessFile {
    fn read_error(&self, e: io::Error, len: usize, offset: u64) -> Error {
        read_error(&self.path, e, len, offset)
    }
}

impl RandomAccessFile for PosixRandomAccessFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.file
            .read_exact_at(buf, offset)
            .map_err(|e| self.read_error(e, buf.len(), offset))
    }

    /// `pread` straight into the new buffer's spare capacity (rustix's `spare_capacity`
    /// sets the length to what the kernel wrote), so the buffer is never zero-filled first.
    fn read_to_vec(&self, len: usize, offset: u64) -> Result<Vec<u8>> {
        let mut buf = Vec::with_capacity(len);
        self.read_append(len, offset, &mut buf)?;
        Ok(buf)
    }

    fn read_append(&self, len: usize, offset: u64, out: &mut Vec<u8>) -> Result<()> {
        let start = out.len();
        // `pread` into the spare capacity fills all of it: a reused buffer much larger than
        // the read (a scan's spare buffer after a large record) would read that many bytes
        // from the file. Such a read goes into zeroed room of exactly `len` instead.
        if out.capacity().saturating_sub(start) > len.saturating_add(READ_APPEND_SLACK) {
            out.resize(start + len, 0);
            return self
                .file
                .read_exact_at(&mut out[start..], offset)
                .map_err(|e| {
                    out.truncate(start);
                    self.read_error(e, len, offset)
                });
        }
        out.reserve(len);
        while out.len() < start + len {
            let at = offset + (out.len() - start) as u64;
            match rustix::io::pread(&self.file, rustix::buffer::spare_capacity(&mut *out), at) {
                Ok(0) => {
                    out.truncate(start);
                    let eof = io::Error::from(io::ErrorKind::UnexpectedEof);
                    return Err(self.read_error(eof, len, offset));
                }
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => {
                    out.truncate(start);
                    return Err(self.read_error(e.into(), len, offset));
                }
            }
        }
        // The buffer may have more capacity than asked for, and `pread` fills it.
        out.truncate(start + len);
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }

    /// `posix_fadvise(RANDOM)` turns off read-ahead for this open file: a miss reads the
    /// pages asked for, not the window the kernel would otherwise add around them.
    /// `SEQUENTIAL` doubles the window. Failure (a file system without it) changes nothing.
    fn advise(&self, access: super::Access) {
        let advice = match access {
            super::Access::Random => rustix::fs::Advice::Random,
            super::Access::Sequential => rustix::fs::Advice::Sequential,
        };
        let _ = rustix::fs::fadvise(&self.file, 0, None, advice);
    }
}

/// One file of a [`MapLimit`]'s budget, given back when dropped (with the map it counts).
struct MapSlot(Option<Arc<MapLimit>>);

impl Drop for MapSlot {
    fn drop(&mut self) {
        self.0.as_deref().unwrap_or(&PROCESS_MAPS).give_back();
    }
}

/// A read-only shared map of the first `len` bytes (`len` > 0, at most the file's size) of
/// `file`, for a file whose mapped bytes never change (an installed table,
/// [`MapUse::Immutable`]): it derefs to `&[u8]`, and ranges of it are lent to readers.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn map_immutable(file: &File, len: usize) -> io::Result<memmap2::Mmap> {
    // SAFETY: `Mmap::map` is unsafe because the mapped bytes may change, or vanish, under
    // the `&[u8]` it hands out if the file is written or truncated while it is mapped.
    // Only `FileSystem::open_mapped` with `MapUse::Immutable` calls this, and the engine
    // asks that only for installed table files (`TableCache`), mapping no more than the
    // committed size the MANIFEST records (`TableId::size`, at most the file's size,
    // checked by the caller). Those bytes never change while the store can read them: a
    // table is written in full, synced and only then named by a version; no code writes
    // into an installed table (`WritableFile` handles of a table are dropped before its
    // edit commits), and an appendable table (dtable) is reopened only to append after its
    // committed size, its `reopen` cutting nothing below it, so a map of an older
    // generation keeps every page it covers. Nothing punches holes in a table. A table is
    // removed by unlinking, which leaves the mapped inode alive until the map is dropped,
    // and the map is dropped only with the last block lent from it (`MapOwner`, owned by a
    // `bytes::Bytes` that every lent range references). The store's LOCK
    // (`PosixFs::lock`) keeps other Shale writers out; read-only and secondary handles
    // never write. The map is private to this process's reads (`PROT_READ`, `MAP_SHARED`
    // of a file opened read-only): no Rust code can write through it.
    //
    // What stays outside Rust's reach is another program (or a person) truncating or
    // rewriting a table file of a live store, and a device error while a page is read in:
    // then a read of a lost page raises `SIGBUS` and the process dies instead of getting
    // an error, and rewritten bytes are read as they are (their block checksums, when
    // checked, catch damage). That is the contract LevelDB (`PosixMmapReadableFile`) and
    // RocksDB (`allow_mmap_reads`) have for the same reads, and `Options::mmap_reads =
    // false` keeps `pread`, where both cases are errors. UNSAFE.md records this block.
    unsafe { memmap2::MmapOptions::new().len(len).map(file) }
}

/// A read-only shared map of the first `len` bytes of `file` for a file a range of which
/// may be punched out while it is mapped (a sealed value-log segment, [`MapUse::Punchable`]).
/// A raw map (`memmap2::MmapRaw`): creating it is safe because it hands out no `&[u8]`, only
/// its address; reads copy out of it in [`PosixRawMappedFile::copy_out`].
#[cfg(target_os = "linux")]
fn map_raw(file: &File, len: usize) -> io::Result<memmap2::MmapRaw> {
    memmap2::MmapOptions::new().len(len).map_raw_read_only(file)
}

/// The error of a read of `len` bytes at `offset` past the `map_len` mapped bytes of `path`,
/// or the range read.
#[cfg(target_os = "linux")]
fn map_range(
    path: &Path,
    map_len: usize,
    len: usize,
    offset: u64,
) -> Result<std::ops::Range<usize>> {
    usize::try_from(offset)
        .ok()
        .and_then(|start| {
            let end = start.checked_add(len)?;
            (end <= map_len).then_some(start..end)
        })
        .ok_or_else(|| {
            let eof = io::Error::from(io::ErrorKind::UnexpectedEof);
            read_error(path, eof, len, offset)
        })
}

/// `madvise` `access` over a whole map: `RANDOM` turns off the read-around a page fault does
/// otherwise (as `fadvise` does for `pread`), `SEQUENTIAL` reads further ahead. A hint:
/// failure changes nothing.
#[cfg(target_os = "linux")]
fn map_advice(access: super::Access) -> memmap2::Advice {
    match access {
        super::Access::Random => memmap2::Advice::Random,
        super::Access::Sequential => memmap2::Advice::Sequential,
    }
}

/// A map and its place in the budget of mapped files: both live until the last buffer
/// lent from the map ([`RandomAccessFile::read_shared`]) is dropped, so that a block still
/// in use keeps its pages mapped after its file handle is closed, and the budget counts the
/// map until it is really gone.
#[cfg(target_os = "linux")]
struct MapOwner {
    map: memmap2::Mmap,
    _slot: MapSlot,
}

#[cfg(target_os = "linux")]
impl AsRef<[u8]> for MapOwner {
    fn as_ref(&self) -> &[u8] {
        &self.map
    }
}

/// A file whose mapped bytes never change, read from a read-only memory map
/// ([`PosixFs::open_mapped`], [`MapUse::Immutable`]): a read copies from the map, with no
/// system call once the pages are mapped, and [`RandomAccessFile::read_shared`] lends a
/// range of the map with no copy at all.
#[cfg(target_os = "linux")]
struct PosixMappedFile {
    /// The whole map, as a shared buffer that owns it ([`MapOwner`]).
    map: bytes::Bytes,
    path: PathBuf,
}

#[cfg(target_os = "linux")]
impl PosixMappedFile {
    /// The mapped bytes `offset..offset + len`, or the error of a read past the end.
    fn bytes(&self, len: usize, offset: u64) -> Result<&[u8]> {
        let r = map_range(&self.path, self.map.len(), len, offset)?;
        Ok(&self.map[r])
    }
}

#[cfg(target_os = "linux")]
impl RandomAccessFile for PosixMappedFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        buf.copy_from_slice(self.bytes(buf.len(), offset)?);
        Ok(())
    }

    fn read_to_vec(&self, len: usize, offset: u64) -> Result<Vec<u8>> {
        Ok(self.bytes(len, offset)?.to_vec())
    }

    fn len(&self) -> u64 {
        self.map.len() as u64
    }

    fn is_mapped(&self) -> bool {
        true
    }

    fn read_shared(&self, len: usize, offset: u64) -> Option<Result<bytes::Bytes>> {
        Some(map_range(&self.path, self.map.len(), len, offset).map(|r| self.map.slice(r)))
    }

    // No `advise`: tables get no access hint (`docs/env.md`), and the map is owned by the
    // lent buffers.
}

/// A file a range of which may be punched out while it is mapped, read from a raw read-only
/// memory map ([`PosixFs::open_mapped`], [`MapUse::Punchable`]): a read copies exactly its
/// range out of the map, and nothing is lent.
#[cfg(target_os = "linux")]
struct PosixRawMappedFile {
    map: memmap2::MmapRaw,
    path: PathBuf,
    _slot: MapSlot,
}

#[cfg(target_os = "linux")]
impl PosixRawMappedFile {
    /// Append the mapped bytes `offset..offset + len` to `out`, or fail as a read past the
    /// end of the file does (nothing appended).
    #[allow(unsafe_code)]
    fn copy_out(&self, len: usize, offset: u64, out: &mut Vec<u8>) -> Result<()> {
        let start = map_range(&self.path, self.map.len(), len, offset)?.start;
        out.reserve(len);
        // SAFETY: how bytes leave a raw map (UNSAFE.md, "reads out of a raw memory map").
        // Memory: `start + len <= map.len()` (checked above), so the source lies inside the
        // mapping, which lives as long as `self`; `reserve` made room for `len` more bytes
        // after `out.len()`, so the destination is valid for `len` writes, and a `Vec`'s heap
        // buffer (fresh, or reused by a scan) cannot overlap a file mapping. `set_len` then
        // covers exactly the bytes just written.
        // Stability: no `&[u8]` over this map exists anywhere (the map is `MmapRaw`, never
        // dereferenced): bytes are only copied, by this raw copy of the caller's range. The
        // range is not changed while it is copied: only value-log segments are mapped this
        // way (`Options::mmap_reads`), and readers copy only records below the segment's
        // valid end, which no byte is written below again (a sealed segment's writer has
        // moved on; the segment being appended to grows only after its end, and its
        // reserved tail, cut at the seal, lies after it too; recovery and repair never cut a
        // sealed segment); the only change is garbage collection punching a collected
        // prefix (`fallocate(PUNCH_HOLE)`, pages then read as zeros; no page leaves the
        // file, so never `SIGBUS`). A prefix is punched only after every reader that could
        // hold a pointer into it is gone (`db/value_jobs.rs::reap`: the versions alive when
        // the step committed, snapshots older than it, and the prefetch jobs of their
        // iterators, which pin them), so the records read here are never in a range being
        // punched.
        // Outside that contract (another program rewriting or punching the file, a reader
        // racing a punch through a bug), the copy may see zeros or a mix of old and new
        // bytes: it is a plain copy of bytes nobody holds a reference to, and every caller
        // checks them (a value record's checksum and key), so the damage is reported as
        // corruption. A file cut short under the map by another program raises `SIGBUS`
        // (UNSAFE.md).
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.map.as_ptr().add(start),
                out.as_mut_ptr().add(out.len()),
                len,
            );
            out.set_len(out.len() + len);
        }
        Ok(())
    }
}

#[cfg(target_os = "linux")]
impl RandomAccessFile for PosixRawMappedFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        // Rare for mapped files (their readers use `read_to_vec`): a copy through a buffer.
        let mut tmp = Vec::new();
        self.copy_out(buf.len(), offset, &mut tmp)?;
        buf.copy_from_slice(&tmp);
        Ok(())
    }

    fn read_to_vec(&self, len: usize, offset: u64) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.copy_out(len, offset, &mut out)?;
        Ok(out)
    }

    fn read_append(&self, len: usize, offset: u64, out: &mut Vec<u8>) -> Result<()> {
        self.copy_out(len, offset, out)
    }

    fn len(&self) -> u64 {
        self.map.len() as u64
    }

    fn is_mapped(&self) -> bool {
        true
    }

    fn advise(&self, access: super::Access) {
        let _ = self.map.advise(map_advice(access));
    }
}

/// The store's lock: an exclusive `flock` on the store directory (when the file system
/// allows one) and one on the lock file, held while the files stay open (see
/// [`PosixFs::lock`]).
struct PosixLock {
    /// The locked lock file and its identity (device, inode).
    file: parking_lot::Mutex<(File, (u64, u64))>,
    /// The locked directory; `None` where directories cannot be locked.
    dir: Option<File>,
    path: PathBuf,
}

impl std::fmt::Debug for PosixLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PosixLock")
            .field("path", &self.path)
            .field("directory_locked", &self.dir.is_some())
            .finish()
    }
}

impl FileLock for PosixLock {
    /// The lock file at the path is still the one locked: good. Otherwise (removed, or
    /// replaced by another file) and with the directory locked, no other process using
    /// directory locks can have opened the store meanwhile: the lock file is created and
    /// locked again, unless another process holds the new one (a process that locks only
    /// the lock file got in), which is [`Error::Locked`]. Without a directory lock nothing
    /// tells whether another process opened the store, and that is an error too.
    fn check(&self) -> Result<()> {
        use std::os::unix::fs::MetadataExt;
        let mut held = self.file.lock();
        match fs::metadata(&self.path) {
            Ok(m) if (m.dev(), m.ino()) == held.1 => return Ok(()),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("stat lock file", &self.path, e)),
        }
        if self.dir.is_none() {
            return Err(Error::io(
                "check lock",
                &self.path,
                io::Error::other(
                    "the lock file was removed or replaced while the store was open, and \
                     this file system cannot lock the directory: another process may have \
                     opened the store, so no file is deleted; close the store and open it again",
                ),
            ));
        }
        let file = lock_file(&self.path)?;
        let id = file_id(&file).map_err(|e| Error::io("stat lock file", &self.path, e))?;
        *held = (file, id);
        Ok(())
    }
}

impl Drop for PosixLock {
    fn drop(&mut self) {
        // Closing the files would release the locks anyway; unlocking first makes the
        // release explicit. A failure leaves nothing to do: the close that follows releases
        // it.
        let _ = self.file.get_mut().0.unlock();
        if let Some(d) = &self.dir {
            let _ = d.unlock();
        }
    }
}

/// Ask the kernel to back the whole 2 MiB pages inside `buf`'s allocation (its capacity,
/// written or not) with transparent huge pages (`madvise(MADV_HUGEPAGE)`; honoured where
/// `/sys/kernel/mm/transparent_hugepage/enabled` is `madvise` or `always`). Meant for a
/// large buffer not yet written: pages already faulted in stay small until the kernel's
/// background collapse. A hint: an error (huge pages off, an old kernel) is ignored, and
/// nothing a program can observe changes but speed and memory use.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
pub(crate) fn advise_huge_pages<T>(buf: &mut Vec<T>) {
    const HUGE: usize = 2 << 20;
    let ptr = buf.as_mut_ptr().cast::<u8>();
    let base = ptr as usize;
    let bytes = buf.capacity().saturating_mul(std::mem::size_of::<T>());
    let start = base.div_ceil(HUGE).saturating_mul(HUGE);
    let end = base.saturating_add(bytes) / HUGE * HUGE;
    if end <= start {
        return;
    }
    // SAFETY: `MADV_HUGEPAGE` changes no byte and the validity of no address: it only
    // marks the range as one the kernel may back with 2 MiB pages (unlike the destructive
    // advices, `MADV_DONTNEED`, `MADV_FREE`, `MADV_REMOVE`, which drop contents). The
    // range is page-aligned, as `madvise` requires, and lies inside the allocation `buf`
    // owns (`start` rounded up from its first byte, `end` down from one past its last), to
    // which we hold `&mut`. See UNSAFE.md.
    let _ = unsafe {
        rustix::mm::madvise(
            ptr.wrapping_add(start - base).cast::<std::ffi::c_void>(),
            end - start,
            rustix::mm::Advice::LinuxHugepage,
        )
    };
}

/// Huge pages are asked for on Linux only.
#[cfg(not(target_os = "linux"))]
pub(crate) fn advise_huge_pages<T>(_buf: &mut Vec<T>) {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// A fresh directory under the system temp dir, removed when dropped.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(name: &str) -> TempDir {
            static NEXT: AtomicU32 = AtomicU32::new(0);
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let dir =
                std::env::temp_dir().join(format!("shale-posix-{}-{name}-{n}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }
        fn path(&self, name: &str) -> PathBuf {
            self.0.join(name)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn read_all(fs: &PosixFs, p: &Path) -> Vec<u8> {
        let f = fs.open(p).unwrap();
        let mut buf = vec![0u8; f.len() as usize];
        f.read_exact_at(&mut buf, 0).unwrap();
        buf
    }

    /// `read_append` into a buffer with little spare room and into one with far more (a
    /// reused scan buffer) reads the same bytes after what the buffer holds, and a read past
    /// the end leaves the buffer as it was.
    #[test]
    fn read_append_reads_exactly_the_range_whatever_the_spare_capacity() {
        let dir = TempDir::new("append");
        let fs = PosixFs::new();
        let p = dir.path("v.log");
        let data: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
        let mut w = fs.create(&p).unwrap();
        w.append(&data).unwrap();
        w.sync().unwrap();
        drop(w);
        let f = fs.open(&p).unwrap();
        for capacity in [0, 64, 128 << 10] {
            let mut out = Vec::with_capacity(capacity);
            out.extend_from_slice(b"head");
            f.read_append(1000, 300, &mut out).unwrap();
            assert_eq!(&out[..4], b"head", "{capacity}");
            assert_eq!(&out[4..], &data[300..1300], "{capacity}");
            let e = f.read_append(1000, 19_500, &mut out).unwrap_err();
            assert!(e.to_string().contains("v.log"), "{e}");
            assert_eq!(out.len(), 1004, "{capacity}: a failed read appends nothing");
        }
    }

    #[test]
    fn reopen_appends_after_a_prefix_and_cuts_the_rest() {
        let dir = TempDir::new("reopen");
        let fs = PosixFs::new();
        let p = dir.path("t.sst");
        let mut w = fs.create(&p).unwrap();
        w.append(b"gen1+uncommitted").unwrap();
        w.sync().unwrap();
        drop(w);
        let mut w = fs.reopen(&p, 4).unwrap();
        assert_eq!(w.len(), 4);
        assert_eq!(fs.file_size(&p).unwrap(), 4);
        w.append(b"+gen2").unwrap();
        w.sync().unwrap();
        assert_eq!(w.len(), 9);
        drop(w);
        assert_eq!(read_all(&fs, &p), b"gen1+gen2");
        let err = fs.reopen(&p, 10).err().unwrap();
        assert!(err.to_string().contains("fewer than the 10"), "{err}");
        assert!(fs.reopen(&dir.path("none"), 0).is_err());
        assert_eq!(read_all(&fs, &p), b"gen1+gen2");
    }

    /// `append_and_flush` puts the same bytes in the file as `append` then `flush`, with
    /// nothing buffered (written straight out) and behind buffered bytes (kept in order),
    /// and is refused after `finish` as `append` is.
    #[test]
    fn append_and_flush_writes_what_append_then_flush_writes() {
        let dir = TempDir::new("append-flush");
        let fs = PosixFs::new();
        let p = dir.path("t.log");
        let mut w = fs.create(&p).unwrap();
        w.append_and_flush(b"one,").unwrap();
        assert_eq!(read_all(&fs, &p), b"one,");
        w.append(b"two,").unwrap();
        w.append_and_flush(b"three").unwrap();
        assert_eq!(w.len(), 13);
        assert_eq!(read_all(&fs, &p), b"one,two,three");
        w.finish().unwrap();
        match w.append_and_flush(b"four") {
            Err(("append", e)) => assert!(e.to_string().contains("append after finish"), "{e}"),
            other => panic!("expected an append error, got {:?}", other.err()),
        }
        assert_eq!(read_all(&fs, &p), b"one,two,three");
    }

    /// A mapped file reads the same bytes as an opened one, reports the mapped length (the
    /// asked prefix of a longer file), and fails a read past its end as a `pread` past the
    /// end of the file does, naming the file and the offset.
    #[test]
    fn a_mapped_file_reads_as_an_opened_one() {
        for map_use in [MapUse::Immutable, MapUse::Punchable] {
            mapped_reads_as_opened(map_use);
        }
    }

    fn mapped_reads_as_opened(map_use: MapUse) {
        let dir = TempDir::new(&format!("mapped-{map_use:?}"));
        let fs = PosixFs::with_map_limit(10);
        let p = dir.path("000007.sst");
        let data: Vec<u8> = (0..20_000u32).map(|i| (i % 253) as u8).collect();
        let mut w = fs.create(&p).unwrap();
        w.append(&data).unwrap();
        w.sync().unwrap();
        drop(w);
        let len = data.len() as u64;
        let opened = fs.open(&p).unwrap();
        let mapped = fs.open_mapped(&p, len, map_use).unwrap();
        assert!(mapped.is_mapped() && !opened.is_mapped());
        assert_eq!(fs.mapped_files(), 1);
        assert_eq!(mapped.len(), opened.len());
        for (off, n) in [
            (0u64, 1usize),
            (4095, 2),
            (12_345, 4096),
            (len - 7, 7),
            (0, 20_000),
        ] {
            let mut a = vec![0u8; n];
            let mut b = vec![1u8; n];
            opened.read_exact_at(&mut a, off).unwrap();
            mapped.read_exact_at(&mut b, off).unwrap();
            assert_eq!(a, b, "{n} bytes at {off}");
            assert_eq!(mapped.read_to_vec(n, off).unwrap(), a);
            // Only an immutable file's map lends its bytes.
            let lent = mapped.read_shared(n, off).map(|r| r.unwrap().to_vec());
            assert_eq!(lent, (map_use == MapUse::Immutable).then_some(a));
        }
        // Past the end: the same error, naming the file and the offset.
        for (off, n) in [(len - 3, 4usize), (len, 1), (u64::MAX, 1), (1, usize::MAX)] {
            let mut buf = vec![0u8; n.min(8)];
            let want = opened.read_to_vec(n.min(8), off).err();
            let got = mapped.read_to_vec(n, off).unwrap_err();
            if let Some(lent) = mapped.read_shared(n, off) {
                assert_eq!(lent.unwrap_err().to_string(), got.to_string());
            }
            let msg = got.to_string();
            assert!(
                msg.contains("000007.sst")
                    && msg.contains(&format!("at offset {off} runs past the end")),
                "{msg}"
            );
            // (`pread` refuses an offset past `i64::MAX` as an invalid argument instead.)
            if n <= 8 && off <= len {
                assert_eq!(msg, want.unwrap().to_string());
                let exact = mapped.read_exact_at(&mut buf, off).unwrap_err();
                assert_eq!(exact.to_string(), msg);
            }
        }
        // A map of a prefix (a table's committed size) ends there.
        let prefix = fs.open_mapped(&p, 100, map_use).unwrap();
        assert_eq!(prefix.len(), 100);
        assert_eq!(prefix.read_to_vec(100, 0).unwrap(), data[..100]);
        assert!(prefix.read_to_vec(1, 100).is_err());
        // A committed size beyond the file maps the file: its length shows what is missing.
        let longer = fs.open_mapped(&p, len + 50, map_use).unwrap();
        assert_eq!(longer.len(), len);
        assert_eq!(fs.mapped_files(), 3);
        // A range lent from an immutable map keeps the map, and its place in the budget,
        // after the file's handle is gone.
        let lent = mapped.read_shared(4096, 12_345).map(|r| r.unwrap());
        drop((mapped, prefix, longer));
        if let Some(lent) = lent {
            assert_eq!(fs.mapped_files(), 1);
            assert_eq!(lent[..], data[12_345..12_345 + 4096]);
            drop(lent);
        }
        assert_eq!(fs.mapped_files(), 0);
        // An empty file, and a missing one, as `open` has them.
        let empty = dir.path("empty");
        drop(fs.create(&empty).unwrap());
        let e = fs.open_mapped(&empty, 0, map_use).unwrap();
        assert!(!e.is_mapped() && e.is_empty());
        assert!(fs.open_mapped(&dir.path("none"), 10, map_use).is_err());
        assert!(fs.open_mapped(&dir.0, 10, map_use).is_err(), "a directory");
    }

    /// Past the budget of mapped files, files open for `pread`; a dropped map gives its
    /// place back. The budget is shared by clones (one store's file system handles).
    #[test]
    fn files_past_the_map_limit_are_read_with_pread() {
        let dir = TempDir::new("maplimit");
        let fs = PosixFs::with_map_limit(2);
        let p = dir.path("t");
        let mut w = fs.create(&p).unwrap();
        w.append(b"0123456789").unwrap();
        drop(w);
        let a = fs.open_mapped(&p, 10, MapUse::Immutable).unwrap();
        let b = fs.clone().open_mapped(&p, 10, MapUse::Punchable).unwrap();
        let c = fs.open_mapped(&p, 10, MapUse::Immutable).unwrap();
        assert!(a.is_mapped() && b.is_mapped() && !c.is_mapped());
        assert_eq!(fs.mapped_files(), 2);
        assert_eq!(c.read_to_vec(4, 6).unwrap(), b"6789");
        drop(a);
        assert_eq!(fs.mapped_files(), 1);
        let d = fs.open_mapped(&p, 10, MapUse::Punchable).unwrap();
        assert!(d.is_mapped());
        assert_eq!(d.read_to_vec(3, 0).unwrap(), b"012");
        drop((b, c, d));
        assert_eq!(fs.mapped_files(), 0);
        let none = PosixFs::with_map_limit(0);
        assert!(
            !none
                .open_mapped(&p, 10, MapUse::Immutable)
                .unwrap()
                .is_mapped()
        );
    }

    #[test]
    fn write_flush_sync_read_back() {
        let dir = TempDir::new("rw");
        let fs = PosixFs::new();
        let p = dir.path("a.log");
        let mut w = fs.create(&p).unwrap();
        assert!(w.is_empty());
        w.append(b"hello ").unwrap();
        w.append(b"world").unwrap();
        assert_eq!(w.len(), 11);
        // Buffered bytes are not yet in the OS file.
        assert_eq!(fs.file_size(&p).unwrap(), 0);
        w.flush().unwrap();
        assert_eq!(fs.file_size(&p).unwrap(), 11);
        // A large append bypasses the buffer but keeps the order.
        let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        w.append(b"!").unwrap();
        w.append(&big).unwrap();
        w.append(b"tail").unwrap();
        w.sync().unwrap();
        assert_eq!(w.len(), 11 + 1 + big.len() as u64 + 4);
        drop(w);
        let data = read_all(&fs, &p);
        let mut expect = b"hello world!".to_vec();
        expect.extend_from_slice(&big);
        expect.extend_from_slice(b"tail");
        assert_eq!(data, expect);

        let f = fs.open(&p).unwrap();
        let mut mid = [0u8; 5];
        f.read_exact_at(&mut mid, 6).unwrap();
        assert_eq!(&mid, b"world");
        fs.sync_dir(&dir.0).unwrap();
    }

    #[test]
    fn a_log_reads_back_what_was_appended_and_finish_cuts_its_reservation() {
        let dir = TempDir::new("log");
        let fs = PosixFs::new();
        let p = dir.path("000001.vlog");
        let mut w = fs.create_log(&p).unwrap();
        // Enough to move the reservation thread several steps, in appends of uneven size.
        let mut expect = Vec::new();
        let mut i = 0u32;
        while expect.len() < 12 << 20 {
            let piece: Vec<u8> = (0..4130 + i % 7).map(|j| (i * 31 + j) as u8).collect();
            w.append(&piece).unwrap();
            w.flush().unwrap();
            expect.extend_from_slice(&piece);
            i += 1;
        }
        // Whatever the thread reserved so far, the appended bytes are all there, and a
        // reader opened now sees them.
        assert!(fs.file_size(&p).unwrap() >= expect.len() as u64);
        let f = fs.open(&p).unwrap();
        let mut got = vec![0u8; expect.len()];
        f.read_exact_at(&mut got, 0).unwrap();
        assert!(got == expect, "the log reads back what was appended");
        w.append(b"end").unwrap();
        expect.extend_from_slice(b"end");
        w.finish().unwrap();
        assert_eq!(fs.file_size(&p).unwrap(), expect.len() as u64);
        assert!(w.append(b"x").is_err());
        w.sync().unwrap();
        drop(w);
        assert!(read_all(&fs, &p) == expect);
        // Dropped without finish: the reservation is cut too.
        let q = dir.path("000002.vlog");
        let mut w = fs.create_log(&q).unwrap();
        w.append(&[1u8; 5000]).unwrap();
        w.flush().unwrap();
        drop(w);
        assert_eq!(fs.file_size(&q).unwrap(), 5000);
    }

    /// Wait until `w`'s reservation reaches `at` (or its thread ended: a file system
    /// without `fallocate`); whether it does is up to the thread, not to time.
    #[cfg(target_os = "linux")]
    fn wait_for_reservation(w: &PosixWritableFile, at: u64) -> bool {
        let Some(r) = &w.reserver else {
            return false;
        };
        loop {
            if r.shared.reserved.load(Ordering::Acquire) >= at {
                return true;
            }
            if r.thread.as_ref().is_none_or(|t| t.is_finished()) {
                return false;
            }
            std::thread::yield_now();
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_mapped_log_reads_back_what_was_appended_through_windows_and_pwrites() {
        let dir = TempDir::new("mlog");
        let fs = PosixFs::new();
        let p = dir.path("000003.log");
        let mut w = PosixWritableFile::create_log(&p, true).unwrap();
        // False only on a file system without `fallocate`: then nothing is mapped.
        let reserving = wait_for_reservation(&w, 1);
        // Small appends (copied into the map while the reservation is ahead of them),
        // every 50th a large one (written with pwrite), past the first 32 MiB window.
        let mut expect = Vec::new();
        let mut i = 0u32;
        let mut mapped = 0u64;
        while expect.len() < LOG_MAP_WINDOW + (3 << 20) {
            let n = if i % 50 == 49 {
                5000
            } else {
                50 + i as usize % 600
            };
            let piece: Vec<u8> = (0..n as u32).map(|j| (i * 31 + j) as u8).collect();
            let ahead = wait_for_reservation(&w, (expect.len() + n) as u64);
            let before = w.mapped_appends;
            w.append_and_flush(&piece).unwrap();
            let copied = w.mapped_appends - before;
            // Copied exactly when small and inside the reservation; else written.
            assert_eq!(
                copied,
                u64::from(ahead && n < MAPPED_APPEND_MAX),
                "append {i}"
            );
            mapped += copied;
            expect.extend_from_slice(&piece);
            i += 1;
        }
        assert!(mapped > 0 || !reserving, "small appends were mapped");
        if mapped > 0 {
            let m = w.map.as_ref().expect("mapped");
            // The first window ends at 32 MiB; the append that did not fit began the next.
            assert!(
                m.base > (LOG_MAP_WINDOW - MAPPED_APPEND_MAX) as u64,
                "a second window was mapped"
            );
        }
        assert_eq!(w.len(), expect.len() as u64);
        // A reader sees every byte at once, before any sync; the reservation reads as
        // zeros after them.
        let size = fs.file_size(&p).unwrap();
        assert!(size >= expect.len() as u64);
        let f = fs.open(&p).unwrap();
        let mut got = vec![0u8; size as usize];
        f.read_exact_at(&mut got, 0).unwrap();
        assert!(
            got[..expect.len()] == expect[..],
            "the log reads back what was appended"
        );
        assert!(got[expect.len()..].iter().all(|&b| b == 0));
        // A sync after megabytes of appends drops the map first; after a few bytes it
        // keeps it.
        w.sync().unwrap();
        assert!(
            w.map.is_none(),
            "unmapped before a sync of {} bytes",
            expect.len()
        );
        let ahead = wait_for_reservation(&w, (expect.len() + 3) as u64);
        w.append_and_flush(b"end").unwrap();
        expect.extend_from_slice(b"end");
        assert_eq!(
            w.map.is_some(),
            ahead,
            "the next small append maps a window again"
        );
        w.sync().unwrap();
        assert_eq!(w.map.is_some(), ahead, "kept over a sync of three bytes");
        w.finish().unwrap();
        assert!(w.map.is_none(), "unmapped before the cut");
        assert_eq!(fs.file_size(&p).unwrap(), expect.len() as u64);
        drop(w);
        assert!(read_all(&fs, &p) == expect);

        // Dropped without finish, with a live map: unmapped and cut at what was appended.
        let q = dir.path("000004.log");
        let mut w = PosixWritableFile::create_log(&q, true).unwrap();
        let ahead = wait_for_reservation(&w, 300);
        w.append(&[7u8; 300]).unwrap();
        w.flush().unwrap();
        assert_eq!(w.map.is_some(), ahead);
        drop(w);
        assert_eq!(read_all(&fs, &q), vec![7u8; 300]);
        // The option off: the same log, written with pwrite only.
        let r = dir.path("000005.log");
        let mut w = PosixWritableFile::create_log(&r, false).unwrap();
        assert!(wait_for_reservation(&w, 4096) || w.reserver.is_none());
        w.append_and_flush(&[9u8; 200]).unwrap();
        assert!(w.map.is_none());
        drop(w);
        assert_eq!(read_all(&fs, &r), vec![9u8; 200]);
    }

    #[test]
    fn drop_flushes_buffer_and_create_truncates() {
        let dir = TempDir::new("drop");
        let fs = PosixFs::new();
        let p = dir.path("f");
        let mut w = fs.create(&p).unwrap();
        w.append(b"abc").unwrap();
        drop(w);
        assert_eq!(read_all(&fs, &p), b"abc");
        let w = fs.create(&p).unwrap();
        drop(w);
        assert_eq!(fs.file_size(&p).unwrap(), 0);
    }

    #[test]
    fn rename_replaces_and_listing() {
        let dir = TempDir::new("rename");
        let fs = PosixFs::new();
        let a = dir.path("CURRENT.tmp");
        let b = dir.path("CURRENT");
        for (p, body) in [(&a, &b"new"[..]), (&b, &b"old"[..])] {
            let mut w = fs.create(p).unwrap();
            w.append(body).unwrap();
            w.sync().unwrap();
        }
        fs.rename(&a, &b).unwrap();
        assert!(!fs.exists(&a).unwrap());
        assert_eq!(read_all(&fs, &b), b"new");
        let mut names = fs.list_dir(&dir.0).unwrap();
        names.sort();
        assert_eq!(names, vec!["CURRENT".to_string()]);
        fs.remove_file(&b).unwrap();
        assert!(fs.list_dir(&dir.0).unwrap().is_empty());
        let err = fs.remove_file(&b).unwrap_err();
        assert!(
            matches!(&err, Error::Io { op: "remove", source, .. } if source.kind() == io::ErrorKind::NotFound),
            "{err}"
        );
        let err = fs.rename(&a, &b).unwrap_err();
        assert!(err.to_string().contains("CURRENT.tmp"), "{err}");
    }

    #[test]
    fn lock_twice_fails_until_dropped() {
        let dir = TempDir::new("lock");
        let fs = PosixFs::new();
        let p = dir.path("LOCK");
        let first = fs.lock(&p).unwrap();
        match fs.lock(&p) {
            Err(Error::Locked { path }) => assert_eq!(path, p),
            other => panic!("expected Locked, got {other:?}"),
        }
        drop(first);
        let again = fs.lock(&p).unwrap();
        drop(again);
    }

    /// Removing the lock file does not let a second lock in (the directory is locked too),
    /// and the holder's check locks a new lock file.
    #[test]
    fn a_removed_lock_file_does_not_release_the_lock() {
        let dir = TempDir::new("lock-removed");
        let fs = PosixFs::new();
        let p = dir.path("LOCK");
        let first = fs.lock(&p).unwrap();
        first.check().unwrap();
        fs.remove_file(&p).unwrap();
        match fs.lock(&p) {
            Err(Error::Locked { path }) => assert_eq!(path, p),
            other => panic!("expected Locked, got {other:?}"),
        }
        // The refused lock created nothing: it stopped at the directory.
        assert!(!fs.exists(&p).unwrap());
        first.check().unwrap();
        assert!(fs.exists(&p).unwrap(), "the check locks a new lock file");
        first.check().unwrap();
        // A lock file replaced by another file: the check takes the new one too.
        fs.remove_file(&p).unwrap();
        let mut w = fs.create(&p).unwrap();
        w.sync().unwrap();
        drop(w);
        first.check().unwrap();
        // Someone else holding the lock file (a process that locks only the lock file, as
        // older versions do): the check refuses.
        fs.remove_file(&p).unwrap();
        let intruder = lock_file(&p).unwrap();
        match first.check() {
            Err(Error::Locked { path }) => assert_eq!(path, p),
            other => panic!("expected Locked, got {other:?}"),
        }
        drop(intruder);
        drop(first);
        drop(fs.lock(&p).unwrap());
    }

    #[test]
    fn reading_past_end_is_an_io_error_naming_the_file() {
        let dir = TempDir::new("eof");
        let fs = PosixFs::new();
        let p = dir.path("short");
        let mut w = fs.create(&p).unwrap();
        w.append(b"0123456789").unwrap();
        w.sync().unwrap();
        let f = fs.open(&p).unwrap();
        assert_eq!(f.len(), 10);
        let eof_naming_the_file = |err: &Error| {
            match err {
                Error::Io {
                    op: "read",
                    path: Some(path),
                    source,
                } => {
                    assert_eq!(path, &p);
                    assert_eq!(source.kind(), io::ErrorKind::UnexpectedEof);
                }
                other => panic!("unexpected {other:?}"),
            }
            assert!(err.to_string().contains("short"), "{err}");
            assert!(err.to_string().contains("at offset 8"), "{err}");
        };
        let mut buf = [0u8; 4];
        eof_naming_the_file(&f.read_exact_at(&mut buf, 8).unwrap_err());
        assert!(f.read_exact_at(&mut buf, 1 << 40).is_err());

        // The read into a new, never zero-filled buffer answers the same.
        assert_eq!(f.read_to_vec(10, 0).unwrap(), b"0123456789");
        assert_eq!(f.read_to_vec(3, 7).unwrap(), b"789");
        assert!(f.read_to_vec(0, 10).unwrap().is_empty());
        eof_naming_the_file(&f.read_to_vec(4, 8).unwrap_err());
        assert!(f.read_to_vec(4, 1 << 40).is_err());
    }

    #[test]
    fn missing_paths_are_not_found() {
        let dir = TempDir::new("missing");
        let fs = PosixFs::new();
        let p = dir.path("nope");
        assert!(!fs.exists(&p).unwrap());
        for err in [
            fs.open(&p).map(|_| ()).unwrap_err(),
            fs.file_size(&p).map(|_| ()).unwrap_err(),
            fs.list_dir(&p).map(|_| ()).unwrap_err(),
            fs.create(&dir.path("nope/x")).map(|_| ()).unwrap_err(),
        ] {
            assert!(
                matches!(&err, Error::Io { source, .. } if source.kind() == io::ErrorKind::NotFound),
                "{err}"
            );
        }
        fs.create_dir_all(&dir.path("x/y/z")).unwrap();
        assert!(fs.exists(&dir.path("x/y")).unwrap());
        assert!(fs.open(&dir.path("x")).is_err());
    }
}
