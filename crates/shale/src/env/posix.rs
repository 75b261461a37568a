//! The real file system, over `std::fs`.
//!
//! Writable files keep a user-space buffer so that the many small appends of a table or
//! log builder become few system calls; [`WritableFile::flush`] hands the buffer to the
//! kernel and [`WritableFile::sync`] additionally calls `fdatasync`. Reads are positioned
//! (`pread`), so one open file serves any number of threads without a seek position.
//!
//! Thread-safety: [`PosixFs`] and its random-access files are shared freely; a writable file
//! has one owner.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{FileLock, FileSyncer, FileSystem, RandomAccessFile, WritableFile};
use crate::error::{Error, Result};

/// Appends smaller than this are gathered in user space; larger ones go straight to the OS.
const WRITE_BUFFER: usize = 64 * 1024;

/// The operating system's file system.
#[derive(Clone, Copy, Debug, Default)]
pub struct PosixFs;

impl PosixFs {
    /// The real file system (stateless: every instance is the same).
    pub fn new() -> PosixFs {
        PosixFs
    }
}

impl FileSystem for PosixFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| Error::io("create", path, e))?;
        Ok(Box::new(PosixWritableFile {
            file,
            path: path.to_path_buf(),
            buf: Vec::with_capacity(WRITE_BUFFER),
            len: 0,
        }))
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let file = File::open(path).map_err(|e| Error::io("open", path, e))?;
        let meta = file.metadata().map_err(|e| Error::io("open", path, e))?;
        if meta.is_dir() {
            return Err(Error::io(
                "open",
                path,
                io::Error::new(io::ErrorKind::IsADirectory, "is a directory, not a file"),
            ));
        }
        Ok(Arc::new(PosixRandomAccessFile {
            file,
            path: path.to_path_buf(),
            len: meta.len(),
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

    fn exists(&self, path: &Path) -> Result<bool> {
        path.try_exists().map_err(|e| Error::io("stat", path, e))
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        fs::metadata(path)
            .map(|m| m.len())
            .map_err(|e| Error::io("stat", path, e))
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
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
            Ok(()) => Ok(Box::new(PosixLock {
                file,
                path: path.to_path_buf(),
            })),
            Err(TryLockError::WouldBlock) => Err(Error::Locked {
                path: path.to_path_buf(),
            }),
            Err(TryLockError::Error(e)) => Err(Error::io("lock", path, e)),
        }
    }
}

/// A file opened for appending, with a user-space buffer.
struct PosixWritableFile {
    file: File,
    path: PathBuf,
    buf: Vec<u8>,
    /// Bytes appended, buffered or not.
    len: u64,
}

impl PosixWritableFile {
    fn write_out(&mut self, data: &[u8]) -> Result<()> {
        self.file
            .write_all(data)
            .map_err(|e| Error::io("write", &self.path, e))
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

    fn sync(&mut self) -> Result<()> {
        self.flush_buffer()?;
        self.file
            .sync_data()
            .map_err(|e| Error::io("sync", &self.path, e))
    }

    fn len(&self) -> u64 {
        self.len
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
        // to flush. Errors cannot be reported here; anyone who cares calls flush or sync.
        let _ = self.flush_buffer();
    }
}

/// A file read with positioned reads.
struct PosixRandomAccessFile {
    file: File,
    path: PathBuf,
    len: u64,
}

impl RandomAccessFile for PosixRandomAccessFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.file.read_exact_at(buf, offset).map_err(|e| {
            let e = if e.kind() == io::ErrorKind::UnexpectedEof {
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "read of {} bytes at offset {offset} runs past the end of the file",
                        buf.len()
                    ),
                )
            } else {
                e
            };
            Error::io("read", &self.path, e)
        })
    }

    fn len(&self) -> u64 {
        self.len
    }
}

/// An exclusive `flock`-style lock, held while the file stays open.
struct PosixLock {
    file: File,
    path: PathBuf,
}

impl std::fmt::Debug for PosixLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PosixLock")
            .field("path", &self.path)
            .finish()
    }
}

impl FileLock for PosixLock {}

impl Drop for PosixLock {
    fn drop(&mut self) {
        // Closing the file would release the lock anyway; unlocking first makes the release
        // explicit. A failure leaves nothing to do: the close that follows releases it.
        let _ = self.file.unlock();
    }
}

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
        let mut buf = [0u8; 4];
        let err = f.read_exact_at(&mut buf, 8).unwrap_err();
        match &err {
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
        assert!(f.read_exact_at(&mut buf, 1 << 40).is_err());
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
