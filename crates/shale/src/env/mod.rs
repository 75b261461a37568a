//! The file-system axis of the engine: every byte the engine reads or writes goes through
//! [`Env`], which wraps a [`FileSystem`] backend and counts bytes by cause.
//!
//! Backends: [`posix::PosixFs`] (the real disk) and [`mem::MemFs`] (in memory, with a model
//! of what survives a crash: data not synced and directory entries not synced are lost by
//! [`mem::MemFs::crash`]). [`fault::FaultFs`] wraps `MemFs` for the crash tests: it numbers
//! mutating operations, fails chosen ones, and captures crash images.
//!
//! Thread-safety: `FileSystem` and `RandomAccessFile` are shared across threads;
//! a `WritableFile` has one owner at a time.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};

pub mod fault;
pub mod mem;
pub mod posix;

/// A file-system backend: the small set of operations the engine needs.
pub trait FileSystem: Send + Sync + fmt::Debug {
    /// Create `path` (truncating it if it exists) for appending.
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>>;
    /// Create `path` for a log: a file appended to in many small pieces, each handed to the
    /// OS before a write is acknowledged. Like [`FileSystem::create`], except that the
    /// backend may reserve space after the appended bytes: until [`WritableFile::finish`]
    /// (or the handle's drop) cuts it off, the file is longer than what was appended and the
    /// reserved bytes read as zeros, so a process or machine crash can leave a log with a
    /// zero-filled tail. Readers of a log treat zeros after its last record as its end.
    ///
    /// The POSIX backend reserves (`fallocate`) and pre-populates the page cache
    /// (`fadvise(WILLNEED)`) a few MiB ahead from a background thread, so that an append
    /// overwrites cached pages instead of allocating and zeroing new ones. The default is
    /// [`FileSystem::create`].
    fn create_log(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.create(path)
    }
    /// [`FileSystem::create_log`] for a log whose small appends the backend may copy into
    /// a writable memory map of its reserved space instead of handing them over with a
    /// system call (`Options::mmap_log_writes`, RocksDB's `allow_mmap_writes`). The bytes
    /// and what a crash leaves are the same as [`FileSystem::create_log`]'s; what differs
    /// is how an I/O error under a mapped page shows: as `SIGBUS`, not an error
    /// (`UNSAFE.md`). The POSIX backend does this on Linux (`docs/env.md`); the default
    /// is [`FileSystem::create_log`].
    fn create_mapped_log(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.create_log(path)
    }
    /// Reopen the existing file `path` to append after its first `at` bytes: a file that
    /// grows by committed generations (an appendable table) continues at the end of the
    /// last committed one. Bytes past `at` (an append that was never committed) are cut
    /// off first. The handle's `len` starts at `at`; appended bytes are durable after
    /// [`WritableFile::sync`], as in a created file, and so is the cut. Nothing about the
    /// directory changes, so no directory sync is needed.
    ///
    /// Fails if the file does not exist or is shorter than `at` (then a committed
    /// generation is missing: the caller reports corruption). The default refuses: a
    /// backend must opt in.
    fn reopen(&self, path: &Path, at: u64) -> Result<Box<dyn WritableFile>> {
        let _ = at;
        Err(crate::Error::Unsupported(format!(
            "reopening {} for append: this file system cannot append to an existing file",
            path.display()
        )))
    }
    /// Open an existing file for positioned reads.
    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>>;
    /// Open an existing file for reads served from a read-only memory map of its first
    /// `len` bytes (fewer if the file is shorter), so that a read of a page the kernel has
    /// cached costs no system call (`Options::mmap_reads`, LevelDB's mmap-ed table reads).
    /// The file's [`RandomAccessFile::len`] is then the mapped length, and reads past it
    /// fail as reads past the end of a file do. `map_use` says how the mapped bytes may
    /// change, and so how they may be read ([`MapUse`]): an installed table's never change,
    /// and its file lends ranges of the map ([`RandomAccessFile::read_shared`]); a
    /// value-log segment's reads copy exactly their range out, and no reference to its
    /// mapped bytes is handed out.
    ///
    /// Only for files nobody truncates or rewrites while the map lives where readers read:
    /// bytes the map covers must stay in the file (bytes after `len` may be cut), and a
    /// range may change only while no reader copies it (a value-log segment's collected
    /// prefix is punched out, reading as zeros, once no reader can need it; the segment
    /// being appended to changes only after its valid end). Shale never changes an
    /// installed table's first `len` bytes (an appendable table only grows past its
    /// committed size); a file cut short under the map by someone else kills the process
    /// with `SIGBUS` on the next read of the lost pages (`UNSAFE.md`).
    ///
    /// A backend that cannot map, or that has mapped its limit of files, opens the file
    /// as [`FileSystem::open`] does (the default: the in-memory and fault-injecting file
    /// systems keep reading, and injecting faults, as before).
    fn open_mapped(
        &self,
        path: &Path,
        len: u64,
        map_use: MapUse,
    ) -> Result<Arc<dyn RandomAccessFile>> {
        let _ = (len, map_use);
        self.open(path)
    }
    /// Atomically rename `from` to `to`, replacing `to` if it exists.
    fn rename(&self, from: &Path, to: &Path) -> Result<()>;
    /// Remove a file.
    fn remove_file(&self, path: &Path) -> Result<()>;
    /// Create a directory and its parents if they do not exist.
    fn create_dir_all(&self, path: &Path) -> Result<()>;
    /// Remove an empty directory (a failed open removes the one it created). The default
    /// refuses: a file system that cannot remove directories leaves them.
    fn remove_dir(&self, path: &Path) -> Result<()> {
        Err(crate::error::Error::io(
            "remove directory",
            path,
            std::io::Error::from(std::io::ErrorKind::Unsupported),
        ))
    }
    /// The names (not paths) of the entries of a directory, in no particular order.
    fn list_dir(&self, path: &Path) -> Result<Vec<String>>;
    /// Make the directory's entries (creations, renames, removals) durable.
    fn sync_dir(&self, path: &Path) -> Result<()>;
    /// Whether `path` exists.
    fn exists(&self, path: &Path) -> Result<bool>;
    /// The size of a file in bytes.
    fn file_size(&self, path: &Path) -> Result<u64>;
    /// Make `to` a second name (a hard link) of the existing file `from`, in the same or
    /// another directory of the same file system; `to` must not exist. Used by checkpoints
    /// for files that never change once written (tables, sealed value-log segments). The
    /// new directory entry is durable after a [`FileSystem::sync_dir`] of its directory.
    /// The default refuses ([`crate::Error::Unsupported`]): the caller copies instead.
    fn hard_link(&self, from: &Path, to: &Path) -> Result<()> {
        Err(crate::Error::Unsupported(format!(
            "hard-linking {} to {}: this file system has no hard links",
            from.display(),
            to.display()
        )))
    }
    /// Free the storage of `len` bytes of `path` from `offset` on, keeping the file's size
    /// (`fallocate(PUNCH_HOLE | KEEP_SIZE)`): the range reads as zeros afterwards and the
    /// whole blocks inside it no longer take space. Returns whether anything was punched:
    /// `false` where the file system cannot (the default), and for a file with more than one
    /// name (a hard link made by a checkpoint must keep its bytes). Whether a crash keeps the
    /// punch is not specified: the caller must never need the range again either way.
    fn punch_hole(&self, path: &Path, offset: u64, len: u64) -> Result<bool> {
        let _ = (path, offset, len);
        Ok(false)
    }
    /// Take an exclusive lock on `path` (creating it). Fails with [`crate::Error::Locked`] if
    /// any other handle, in this process or another, holds it. Released when dropped.
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>>;
}

/// What a memory map of a file is for ([`FileSystem::open_mapped`]): how its bytes may
/// change while it is mapped, and so how reads may use them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapUse {
    /// The mapped bytes never change (an installed table): ranges of the map may be lent
    /// to readers with no copy ([`RandomAccessFile::read_shared`]).
    Immutable,
    /// A range may change while the map lives where no reader reads (a value-log segment:
    /// its collected prefix is punched out once no reader can need it, and the segment
    /// being appended to grows after its valid end): reads copy exactly their range out of
    /// the map, and no reference to the mapped bytes is handed out.
    Punchable,
}

/// A file being written sequentially.
pub trait WritableFile: Send {
    /// Append bytes (they may sit in a user-space buffer until [`WritableFile::flush`]).
    fn append(&mut self, data: &[u8]) -> Result<()>;
    /// Hand buffered bytes to the operating system: after this they survive a process crash.
    fn flush(&mut self) -> Result<()>;
    /// Make every appended byte durable: after this they survive a machine crash.
    fn sync(&mut self) -> Result<()>;
    /// [`WritableFile::append`] then [`WritableFile::flush`] in one call, which a backend
    /// may do without copying `data` into its buffer; an error names the step that failed,
    /// `"append"` or `"flush"` (the log's writer records it).
    fn append_and_flush(&mut self, data: &[u8]) -> std::result::Result<(), (&'static str, Error)> {
        self.append(data).map_err(|e| ("append", e))?;
        self.flush().map_err(|e| ("flush", e))
    }
    /// Bytes appended so far.
    fn len(&self) -> u64;
    /// True when nothing has been appended.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// No more appends: hand buffered bytes to the OS and give back space reserved after
    /// them (see [`FileSystem::create_log`]), so the file ends at [`WritableFile::len`]. Not
    /// a sync: call [`WritableFile::sync`] (or a syncer) afterwards to make the end durable.
    /// Appending after `finish` may be refused (the POSIX and in-memory backends do).
    fn finish(&mut self) -> Result<()> {
        self.flush()
    }
    /// A second handle that makes this file's data durable while this one keeps appending
    /// (so a sync need not wait for the appender, nor the appender for a sync). `None` when
    /// the backend has none; callers then sync through this handle.
    fn syncer(&self) -> Option<Arc<dyn FileSyncer>> {
        None
    }
}

/// Makes one file's data durable, independently of the handle that appends to it.
pub trait FileSyncer: Send + Sync {
    /// Make every byte handed to the operating system so far (by any handle of the file:
    /// bytes still in a writer's user-space buffer are not covered) durable.
    fn sync_data(&self) -> Result<()>;
}

/// How a file is about to be read, for the operating system's read-ahead
/// (`posix_fadvise`). A hint: it changes no result, only how many bytes a read that misses
/// the page cache brings in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Reads at scattered offsets (a value log's pointer reads): read no more than asked.
    Random,
    /// One pass from front to back (garbage collection's segment scan): read far ahead.
    Sequential,
}

/// A file read at arbitrary offsets, shared between threads.
pub trait RandomAccessFile: Send + Sync {
    /// Fill `buf` from `offset`. Reading past the end is an error.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()>;
    /// Read `len` bytes at `offset` into a new buffer. Reading past the end is an error.
    /// The default zero-fills a buffer and calls [`RandomAccessFile::read_exact_at`]; a
    /// backend may read into the buffer's spare capacity instead (the POSIX one does: a
    /// block read from the page cache then costs no memset of the block).
    fn read_to_vec(&self, len: usize, offset: u64) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; len];
        self.read_exact_at(&mut buf, offset)?;
        Ok(buf)
    }
    /// Append the `len` bytes at `offset` to `out`, in its spare capacity where it has
    /// room (a reader that reads one record after another into the same buffer allocates
    /// once). Reading past the end is an error, and leaves `out` as it was. The default
    /// zero-fills the new bytes and calls [`RandomAccessFile::read_exact_at`].
    fn read_append(&self, len: usize, offset: u64, out: &mut Vec<u8>) -> Result<()> {
        let start = out.len();
        out.resize(start + len, 0);
        let r = self.read_exact_at(out.get_mut(start..).unwrap_or_default(), offset);
        if r.is_err() {
            out.truncate(start);
        }
        r
    }
    /// The file's size when it was opened.
    fn len(&self) -> u64;
    /// True for an empty file.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Whether reads are served from a memory map ([`FileSystem::open_mapped`]) rather
    /// than by read calls. Default false.
    fn is_mapped(&self) -> bool {
        false
    }
    /// The `len` bytes at `offset` without a copy, for a file that can lend them (a mapped
    /// one: the returned buffer keeps the map alive, so it may outlive this handle).
    /// `None` when the backend has no such bytes (the default): the caller reads with
    /// [`RandomAccessFile::read_to_vec`]. Reading past the end is an error, as for a read.
    fn read_shared(&self, len: usize, offset: u64) -> Option<Result<bytes::Bytes>> {
        let _ = (len, offset);
        None
    }
    /// Tell the backend how this handle will be read (see [`Access`]). A hint: the default
    /// ignores it, and a backend that cannot apply it ignores the failure.
    fn advise(&self, access: Access) {
        let _ = access;
    }
}

/// A held lock; dropping it releases the lock.
pub trait FileLock: Send + Sync + fmt::Debug {
    /// Whether the lock still excludes every other opener: the engine asks before it
    /// deletes files, so that a store whose lock was lost (its `LOCK` file removed and a
    /// second process let in) deletes nothing the other one may need. A backend may repair
    /// what it can (the POSIX backend locks a new lock file when the directory lock proves
    /// nobody else got in). Default: nothing can take the lock away.
    ///
    /// # Errors
    /// [`crate::Error::Locked`] when another handle now holds the lock file; another error
    /// when the backend cannot tell.
    fn check(&self) -> Result<()> {
        Ok(())
    }
}

/// Why bytes were written. On the stats surface only; never on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WriteCause {
    /// The write-ahead log.
    Wal,
    /// Memtable flushes.
    Flush,
    /// Compactions.
    Compaction,
    /// MANIFEST and CURRENT.
    Manifest,
    /// A value log (values separated from keys).
    Vlog,
    /// Value-log garbage collection.
    Gc,
    /// Anything else (LOCK, temporary files).
    Other,
}

impl WriteCause {
    /// Every cause, in display order.
    pub const ALL: [WriteCause; 7] = [
        WriteCause::Wal,
        WriteCause::Flush,
        WriteCause::Compaction,
        WriteCause::Manifest,
        WriteCause::Vlog,
        WriteCause::Gc,
        WriteCause::Other,
    ];
    /// A short lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            WriteCause::Wal => "wal",
            WriteCause::Flush => "flush",
            WriteCause::Compaction => "compaction",
            WriteCause::Manifest => "manifest",
            WriteCause::Vlog => "vlog",
            WriteCause::Gc => "gc",
            WriteCause::Other => "other",
        }
    }
}

/// Why bytes were read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReadCause {
    /// Point lookups.
    Get,
    /// Iterators and scans: the tables' blocks.
    Scan,
    /// Iterators and scans: the separated values they resolve (value-log records), apart
    /// from the tables' blocks so that what a scan of separated values costs shows.
    ScanValue,
    /// Compactions.
    Compaction,
    /// Value-log garbage collection.
    Gc,
    /// Opening the store: WAL replay, MANIFEST, CURRENT, value-log segment scans.
    Recovery,
    /// Opening a table file: its footer, index, filters and properties. Counted apart from
    /// `Recovery` because the table cache opens tables at any time, not only at open: a
    /// store with more tables than `max_open_files` pays this on gets too.
    TableOpen,
    /// Anything else (verify, dump).
    Other,
}

impl ReadCause {
    /// Every cause, in display order.
    pub const ALL: [ReadCause; 8] = [
        ReadCause::Get,
        ReadCause::Scan,
        ReadCause::ScanValue,
        ReadCause::Compaction,
        ReadCause::Gc,
        ReadCause::Recovery,
        ReadCause::TableOpen,
        ReadCause::Other,
    ];
    /// A short lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            ReadCause::Get => "get",
            ReadCause::Scan => "scan",
            ReadCause::ScanValue => "scan-value",
            ReadCause::Compaction => "compaction",
            ReadCause::Gc => "gc",
            ReadCause::Recovery => "recovery",
            ReadCause::TableOpen => "table-open",
            ReadCause::Other => "other",
        }
    }
}

/// What kind of block a read fetched from storage, for the counts of blocks read (not
/// served by the block cache) by cause ([`IoStats::block_reads`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockKind {
    /// A table's data: an `sst` data block, an `htable` bucket or overflow record.
    Data,
    /// A filter block read on demand (an `htable` filter cluster's column block, or a
    /// whole cluster loaded at once); filters read when a table is opened are not counted.
    Filter,
    /// A value read from a value log.
    Value,
}

impl BlockKind {
    /// Every kind, in display order.
    pub const ALL: [BlockKind; 3] = [BlockKind::Data, BlockKind::Filter, BlockKind::Value];
    /// A short lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            BlockKind::Data => "data",
            BlockKind::Filter => "filter",
            BlockKind::Value => "value",
        }
    }
}

/// Byte counters by cause, and counts of blocks read by cause and kind. Lock-free; shared
/// by every file of one store.
#[derive(Debug, Default)]
pub struct IoStats {
    written: [AtomicU64; 7],
    read: [AtomicU64; ReadCause::ALL.len()],
    blocks: [[AtomicU64; BlockKind::ALL.len()]; ReadCause::ALL.len()],
}

impl IoStats {
    /// Count `n` bytes written for `cause`.
    #[inline]
    pub fn add_written(&self, cause: WriteCause, n: u64) {
        self.written[cause as usize].fetch_add(n, Ordering::Relaxed);
    }
    /// Count `n` bytes read for `cause`.
    #[inline]
    pub fn add_read(&self, cause: ReadCause, n: u64) {
        self.read[cause as usize].fetch_add(n, Ordering::Relaxed);
    }
    /// Bytes written so far for `cause`.
    pub fn written(&self, cause: WriteCause) -> u64 {
        self.written[cause as usize].load(Ordering::Relaxed)
    }
    /// Bytes read so far for `cause`.
    pub fn read(&self, cause: ReadCause) -> u64 {
        self.read[cause as usize].load(Ordering::Relaxed)
    }
    /// Count one block of `kind` read from storage for `cause`.
    #[inline]
    pub fn add_block_read(&self, cause: ReadCause, kind: BlockKind) {
        self.blocks[cause as usize][kind as usize].fetch_add(1, Ordering::Relaxed);
    }
    /// Blocks of `kind` read from storage so far for `cause` (block-cache hits are not
    /// reads).
    pub fn block_reads(&self, cause: ReadCause, kind: BlockKind) -> u64 {
        self.blocks[cause as usize][kind as usize].load(Ordering::Relaxed)
    }
    /// Bytes written for every cause together.
    pub fn total_written(&self) -> u64 {
        WriteCause::ALL.iter().map(|&c| self.written(c)).sum()
    }
    /// Bytes read for every cause together.
    pub fn total_read(&self) -> u64 {
        ReadCause::ALL.iter().map(|&c| self.read(c)).sum()
    }
}

/// The engine's view of the file system: a backend plus byte accounting.
#[derive(Clone, Debug)]
pub struct Env {
    fs: Arc<dyn FileSystem>,
    io: Arc<IoStats>,
}

impl Env {
    /// An environment over `fs` with fresh counters.
    pub fn new(fs: Arc<dyn FileSystem>) -> Env {
        Env {
            fs,
            io: Arc::new(IoStats::default()),
        }
    }
    /// The real file system.
    pub fn posix() -> Env {
        Env::new(Arc::new(posix::PosixFs::new()))
    }
    /// A fresh in-memory file system.
    pub fn memory() -> Env {
        Env::new(Arc::new(mem::MemFs::new()))
    }
    /// The backend.
    pub fn fs(&self) -> &Arc<dyn FileSystem> {
        &self.fs
    }
    /// The byte counters.
    pub fn io(&self) -> &Arc<IoStats> {
        &self.io
    }
    /// Create a file whose writes are counted under `cause`.
    pub fn create(&self, path: &Path, cause: WriteCause) -> Result<WriteFile> {
        Ok(self.counted(self.fs.create(path)?, path, cause))
    }
    /// Create a log file (see [`FileSystem::create_log`]) whose writes are counted under
    /// `cause`.
    pub fn create_log(&self, path: &Path, cause: WriteCause) -> Result<WriteFile> {
        Ok(self.counted(self.fs.create_log(path)?, path, cause))
    }
    /// [`Env::create_log`], its small appends copied into a writable map where the backend
    /// can ([`FileSystem::create_mapped_log`]) when `mapped`.
    pub fn create_log_with(
        &self,
        path: &Path,
        cause: WriteCause,
        mapped: bool,
    ) -> Result<WriteFile> {
        if mapped {
            Ok(self.counted(self.fs.create_mapped_log(path)?, path, cause))
        } else {
            self.create_log(path, cause)
        }
    }
    /// Reopen `path` to append after its first `at` bytes (see [`FileSystem::reopen`]),
    /// with writes counted under `cause`.
    pub fn reopen(&self, path: &Path, at: u64, cause: WriteCause) -> Result<WriteFile> {
        Ok(self.counted(self.fs.reopen(path, at)?, path, cause))
    }
    fn counted(&self, inner: Box<dyn WritableFile>, path: &Path, cause: WriteCause) -> WriteFile {
        WriteFile {
            inner,
            cause,
            io: Arc::clone(&self.io),
            path: path.to_path_buf(),
        }
    }
    /// Open a file for reading; each read names its cause.
    pub fn open(&self, path: &Path) -> Result<ReadFile> {
        let inner = self.fs.open(path)?;
        Ok(ReadFile {
            inner,
            io: Arc::clone(&self.io),
            path: Arc::from(path),
        })
    }
    /// Open a file for reads from a memory map of its first `len` bytes, used as `map_use`
    /// says, where the backend can map it ([`FileSystem::open_mapped`]); each read names
    /// its cause.
    pub fn open_mapped(&self, path: &Path, len: u64, map_use: MapUse) -> Result<ReadFile> {
        let inner = self.fs.open_mapped(path, len, map_use)?;
        Ok(ReadFile {
            inner,
            io: Arc::clone(&self.io),
            path: Arc::from(path),
        })
    }
    /// Read a whole (small) file, counted under `cause`.
    pub fn read_all(&self, path: &Path, cause: ReadCause) -> Result<Vec<u8>> {
        let f = self.open(path)?;
        let len = usize::try_from(f.len())
            .map_err(|_| crate::Error::corruption(path, 0, "file too large to read into memory"))?;
        let mut buf = vec![0u8; len];
        f.read_exact_at(&mut buf, 0, cause)?;
        Ok(buf)
    }
}

/// A file being written, counting every byte under one cause.
pub struct WriteFile {
    inner: Box<dyn WritableFile>,
    cause: WriteCause,
    io: Arc<IoStats>,
    path: PathBuf,
}

impl fmt::Debug for WriteFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriteFile")
            .field("path", &self.path)
            .field("cause", &self.cause)
            .finish()
    }
}

impl WriteFile {
    /// Append bytes.
    pub fn append(&mut self, data: &[u8]) -> Result<()> {
        self.inner.append(data)?;
        self.io.add_written(self.cause, data.len() as u64);
        Ok(())
    }
    /// Count the bytes appended from now on under `cause` (a value-log segment takes both
    /// foreground writes and garbage-collection rewrites).
    pub fn set_cause(&mut self, cause: WriteCause) {
        self.cause = cause;
    }
    /// Hand buffered bytes to the OS.
    pub fn flush(&mut self) -> Result<()> {
        self.inner.flush()
    }
    /// [`WriteFile::append`] then [`WriteFile::flush`] ([`WritableFile::append_and_flush`]);
    /// the bytes count as written once appended, as with the two calls.
    pub fn append_and_flush(
        &mut self,
        data: &[u8],
    ) -> std::result::Result<(), (&'static str, Error)> {
        let r = self.inner.append_and_flush(data);
        if !matches!(r, Err(("append", _))) {
            self.io.add_written(self.cause, data.len() as u64);
        }
        r
    }
    /// Make appended bytes durable.
    pub fn sync(&mut self) -> Result<()> {
        self.inner.sync()
    }
    /// Stop appending: see [`WritableFile::finish`].
    pub fn finish(&mut self) -> Result<()> {
        self.inner.finish()
    }
    /// A handle that syncs this file from another thread (see [`WritableFile::syncer`]).
    pub fn syncer(&self) -> Option<Arc<dyn FileSyncer>> {
        self.inner.syncer()
    }
    /// Stop appending and keep only what syncs the file: the backend's syncer, or this
    /// handle behind a lock where the backend has none. Call [`WriteFile::flush`] first: an
    /// error of the implicit flush when the handle is dropped cannot be reported.
    pub fn into_syncer(self) -> Arc<dyn FileSyncer> {
        match self.inner.syncer() {
            Some(s) => s,
            None => Arc::new(OwnedSyncer(parking_lot::Mutex::new(self))),
        }
    }
    /// Bytes appended so far.
    pub fn len(&self) -> u64 {
        self.inner.len()
    }
    /// True when nothing has been appended.
    pub fn is_empty(&self) -> bool {
        self.inner.len() == 0
    }
    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Syncs through the appending handle itself, for backends without a separate syncer.
struct OwnedSyncer(parking_lot::Mutex<WriteFile>);

impl FileSyncer for OwnedSyncer {
    fn sync_data(&self) -> Result<()> {
        self.0.lock().sync()
    }
}

/// A file opened for reading; cheap to clone and share.
#[derive(Clone)]
pub struct ReadFile {
    inner: Arc<dyn RandomAccessFile>,
    io: Arc<IoStats>,
    path: Arc<Path>,
}

impl fmt::Debug for ReadFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadFile")
            .field("path", &self.path)
            .finish()
    }
}

impl ReadFile {
    /// Fill `buf` from `offset`, counting the bytes under `cause`.
    pub fn read_exact_at(&self, buf: &mut [u8], offset: u64, cause: ReadCause) -> Result<()> {
        self.inner.read_exact_at(buf, offset)?;
        self.io.add_read(cause, buf.len() as u64);
        Ok(())
    }
    /// Count one block of `kind` read under `cause` (after reading its bytes with
    /// [`ReadFile::read_at`] or [`ReadFile::read_exact_at`], which count the bytes).
    #[inline]
    pub fn count_block(&self, cause: ReadCause, kind: BlockKind) {
        self.io.add_block_read(cause, kind);
    }
    /// Read `len` bytes at `offset` into a new buffer. `len` must have been checked against
    /// [`ReadFile::len`] by the caller; reading past the end is an error, not a huge allocation.
    pub fn read_at(&self, offset: u64, len: usize, cause: ReadCause) -> Result<Vec<u8>> {
        self.check_range(offset, len)?;
        let buf = self.inner.read_to_vec(len, offset)?;
        self.io.add_read(cause, len as u64);
        Ok(buf)
    }
    /// The error of a read of `len` bytes at `offset` that runs past the end of the file
    /// (as long as the handle saw it), naming the file and offset.
    fn check_range(&self, offset: u64, len: usize) -> Result<()> {
        let end = offset.checked_add(len as u64);
        if end.is_none_or(|e| e > self.len()) {
            return Err(crate::Error::corruption(
                self.path.to_path_buf(),
                offset,
                format!(
                    "read of {len} bytes at offset {offset} runs past the end of the {}-byte file",
                    self.len()
                ),
            ));
        }
        Ok(())
    }
    /// Read `len` bytes at `offset` into a new buffer, as [`ReadFile::read_at`] does (no
    /// zero-fill first where the backend reads into spare capacity), but without checking
    /// the range against the length the handle saw when it was opened: for a file that
    /// grows while its handle is cached (a value-log segment), read only where the caller
    /// has checked that the file holds the bytes (and bounds `len` by it). Reading past
    /// the end is an error.
    pub fn read_grown_at(&self, offset: u64, len: usize, cause: ReadCause) -> Result<Vec<u8>> {
        let buf = self.inner.read_to_vec(len, offset)?;
        self.io.add_read(cause, len as u64);
        Ok(buf)
    }
    /// [`ReadFile::read_grown_at`] into `out` (appended, in its spare capacity where it has
    /// room: [`RandomAccessFile::read_append`]), so that a caller reading one record after
    /// another can reuse one buffer.
    pub fn read_grown_into(
        &self,
        offset: u64,
        len: usize,
        out: &mut Vec<u8>,
        cause: ReadCause,
    ) -> Result<()> {
        self.inner.read_append(len, offset, out)?;
        self.io.add_read(cause, len as u64);
        Ok(())
    }
    /// Lend `len` bytes at `offset` without copying them, counted as [`ReadFile::read_at`]
    /// counts them, when the backend can ([`RandomAccessFile::read_shared`]: a mapped
    /// file); `None` otherwise. The range is checked against the file's length as
    /// [`ReadFile::read_at`] checks it.
    pub fn read_shared(
        &self,
        offset: u64,
        len: usize,
        cause: ReadCause,
    ) -> Option<Result<bytes::Bytes>> {
        if let Err(e) = self.check_range(offset, len) {
            return self.inner.is_mapped().then_some(Err(e));
        }
        let got = self.inner.read_shared(len, offset)?;
        if got.is_ok() {
            self.io.add_read(cause, len as u64);
        }
        Some(got)
    }
    /// Tell the backend how this handle will be read (a hint, see [`Access`]).
    pub fn advise(&self, access: Access) {
        self.inner.advise(access);
    }
    /// The file's size.
    pub fn len(&self) -> u64 {
        self.inner.len()
    }
    /// True for an empty file.
    pub fn is_empty(&self) -> bool {
        self.inner.len() == 0
    }
    /// Whether reads come from a memory map ([`Env::open_mapped`]).
    pub fn is_mapped(&self) -> bool {
        self.inner.is_mapped()
    }
    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}
