//! A minimal in-memory file system for the table tests, so they run without the real
//! backends. Files are byte vectors; readers see the bytes as they were when opened.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::env::{Env, FileLock, FileSystem, RandomAccessFile, WritableFile};
use crate::error::{Error, Result};

type Files = Arc<Mutex<HashMap<PathBuf, Vec<u8>>>>;

#[derive(Debug, Default, Clone)]
pub(crate) struct TestFs {
    files: Files,
}

impl TestFs {
    /// A fresh file system and an `Env` over it.
    pub(crate) fn env() -> (TestFs, Env) {
        let fs = TestFs::default();
        (fs.clone(), Env::new(Arc::new(fs)))
    }
    pub(crate) fn get(&self, path: &Path) -> Vec<u8> {
        self.files.lock().get(path).cloned().unwrap_or_default()
    }
    pub(crate) fn set(&self, path: &Path, data: Vec<u8>) {
        self.files.lock().insert(path.to_path_buf(), data);
    }
}

fn missing(path: &Path) -> Error {
    Error::io(
        "open",
        path,
        std::io::Error::from(std::io::ErrorKind::NotFound),
    )
}

struct Writer {
    files: Files,
    path: PathBuf,
    len: u64,
}

impl WritableFile for Writer {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        let mut f = self.files.lock();
        f.entry(self.path.clone())
            .or_default()
            .extend_from_slice(data);
        self.len += data.len() as u64;
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        self.len
    }
}

struct ReaderFile(Vec<u8>);

impl RandomAccessFile for ReaderFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        match self.0.get(start..start.saturating_add(buf.len())) {
            Some(s) => {
                buf.copy_from_slice(s);
                Ok(())
            }
            None => Err(Error::io(
                "read",
                "<test>",
                std::io::Error::from(std::io::ErrorKind::UnexpectedEof),
            )),
        }
    }
    fn len(&self) -> u64 {
        self.0.len() as u64
    }
}

impl FileSystem for TestFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.files.lock().insert(path.to_path_buf(), Vec::new());
        Ok(Box::new(Writer {
            files: Arc::clone(&self.files),
            path: path.to_path_buf(),
            len: 0,
        }))
    }
    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let data = self
            .files
            .lock()
            .get(path)
            .cloned()
            .ok_or_else(|| missing(path))?;
        Ok(Arc::new(ReaderFile(data)))
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let mut f = self.files.lock();
        let d = f.remove(from).ok_or_else(|| missing(from))?;
        f.insert(to.to_path_buf(), d);
        Ok(())
    }
    fn remove_file(&self, path: &Path) -> Result<()> {
        self.files
            .lock()
            .remove(path)
            .map(drop)
            .ok_or_else(|| missing(path))
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
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect())
    }
    fn sync_dir(&self, _path: &Path) -> Result<()> {
        Ok(())
    }
    fn exists(&self, path: &Path) -> Result<bool> {
        Ok(self.files.lock().contains_key(path))
    }
    fn file_size(&self, path: &Path) -> Result<u64> {
        self.files
            .lock()
            .get(path)
            .map(|d| d.len() as u64)
            .ok_or_else(|| missing(path))
    }
    fn lock(&self, _path: &Path) -> Result<Box<dyn FileLock>> {
        Err(Error::Unsupported(
            "locks in the table test file system".into(),
        ))
    }
}
