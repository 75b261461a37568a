//! In-memory backend (in progress).
#![allow(missing_docs)]
#[derive(Debug, Default)]
pub struct MemFs;
impl MemFs { pub fn new() -> Self { MemFs } }
use std::path::Path;
use std::sync::Arc;
use crate::error::{Error, Result};
use super::*;
fn todo<T>() -> Result<T> { Err(Error::Unsupported("backend in progress".into())) }
impl FileSystem for MemFs {
    fn create(&self, _p: &Path) -> Result<Box<dyn WritableFile>> { todo() }
    fn open(&self, _p: &Path) -> Result<Arc<dyn RandomAccessFile>> { todo() }
    fn rename(&self, _f: &Path, _t: &Path) -> Result<()> { todo() }
    fn remove_file(&self, _p: &Path) -> Result<()> { todo() }
    fn create_dir_all(&self, _p: &Path) -> Result<()> { todo() }
    fn list_dir(&self, _p: &Path) -> Result<Vec<String>> { todo() }
    fn sync_dir(&self, _p: &Path) -> Result<()> { todo() }
    fn exists(&self, _p: &Path) -> Result<bool> { todo() }
    fn file_size(&self, _p: &Path) -> Result<u64> { todo() }
    fn lock(&self, _p: &Path) -> Result<Box<dyn FileLock>> { todo() }
}
