//! A minimal in-memory file system for the tests of this module: it records every mutating
//! operation so tests can check the order of the CURRENT protocol, and lets tests damage
//! files. (The engine's real in-memory backend is `env::mem::MemFs`.)

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::env::{Env, FileLock, FileSystem, RandomAccessFile, WritableFile};
use crate::error::{Error, Result};

type Data = Arc<Mutex<Vec<u8>>>;

#[derive(Debug, Default)]
pub(crate) struct TestFs {
    files: Mutex<HashMap<PathBuf, Data>>,
    ops: Arc<Mutex<Vec<String>>>,
}

impl TestFs {
    /// A fresh file system and an `Env` over it.
    pub(crate) fn env() -> (Arc<TestFs>, Env) {
        let fs = Arc::new(TestFs::default());
        let env = Env::new(Arc::clone(&fs) as Arc<dyn FileSystem>);
        (fs, env)
    }

    /// The mutating operations so far, e.g. `"rename /a /b"`.
    pub(crate) fn ops(&self) -> Vec<String> {
        self.ops.lock().clone()
    }

    pub(crate) fn contains(&self, path: &Path) -> bool {
        self.files.lock().contains_key(path)
    }

    /// Change a file's bytes in place.
    pub(crate) fn modify(&self, path: &Path, f: impl FnOnce(&mut Vec<u8>)) {
        let data = self.files.lock().get(path).cloned();
        f(&mut data.expect("no such file").lock());
    }

    fn op(&self, s: String) {
        self.ops.lock().push(s);
    }

    fn not_found(op: &'static str, path: &Path) -> Error {
        Error::io(
            op,
            path,
            std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
        )
    }
}

struct TestWritable {
    path: PathBuf,
    data: Data,
    ops: Arc<Mutex<Vec<String>>>,
}

impl WritableFile for TestWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.ops
            .lock()
            .push(format!("append {}", self.path.display()));
        self.data.lock().extend_from_slice(data);
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        self.ops
            .lock()
            .push(format!("sync {}", self.path.display()));
        Ok(())
    }
    fn len(&self) -> u64 {
        self.data.lock().len() as u64
    }
}

struct TestReadable(Vec<u8>);

impl RandomAccessFile for TestReadable {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let src = usize::try_from(offset)
            .ok()
            .and_then(|o| self.0.get(o..o.checked_add(buf.len())?))
            .ok_or_else(|| {
                Error::io(
                    "read",
                    "test",
                    std::io::Error::from(std::io::ErrorKind::UnexpectedEof),
                )
            })?;
        buf.copy_from_slice(src);
        Ok(())
    }
    fn len(&self) -> u64 {
        self.0.len() as u64
    }
}

#[derive(Debug)]
struct TestLock;
impl FileLock for TestLock {}

impl FileSystem for TestFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.op(format!("create {}", path.display()));
        let data: Data = Arc::default();
        self.files
            .lock()
            .insert(path.to_path_buf(), Arc::clone(&data));
        Ok(Box::new(TestWritable {
            path: path.to_path_buf(),
            data,
            ops: Arc::clone(&self.ops),
        }))
    }
    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let data = self.files.lock().get(path).cloned();
        let data = data.ok_or_else(|| TestFs::not_found("open", path))?;
        let bytes = data.lock().clone();
        Ok(Arc::new(TestReadable(bytes)))
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.op(format!("rename {} {}", from.display(), to.display()));
        let mut files = self.files.lock();
        let data = files
            .remove(from)
            .ok_or_else(|| TestFs::not_found("rename", from))?;
        files.insert(to.to_path_buf(), data);
        Ok(())
    }
    fn remove_file(&self, path: &Path) -> Result<()> {
        self.op(format!("remove {}", path.display()));
        self.files
            .lock()
            .remove(path)
            .map(|_| ())
            .ok_or_else(|| TestFs::not_found("remove", path))
    }
    fn create_dir_all(&self, _path: &Path) -> Result<()> {
        Ok(())
    }
    fn list_dir(&self, path: &Path) -> Result<Vec<String>> {
        Ok(self
            .files
            .lock()
            .keys()
            .filter(|p| p.parent() == Some(path))
            .filter_map(|p| p.file_name()?.to_str().map(str::to_string))
            .collect())
    }
    fn sync_dir(&self, path: &Path) -> Result<()> {
        self.op(format!("sync_dir {}", path.display()));
        Ok(())
    }
    fn exists(&self, path: &Path) -> Result<bool> {
        Ok(self.contains(path))
    }
    fn file_size(&self, path: &Path) -> Result<u64> {
        let data = self.files.lock().get(path).cloned();
        Ok(data
            .ok_or_else(|| TestFs::not_found("stat", path))?
            .lock()
            .len() as u64)
    }
    fn lock(&self, _path: &Path) -> Result<Box<dyn FileLock>> {
        Ok(Box::new(TestLock))
    }
}
