//! The database handle: open and recover, the write path, the read path, background work.

mod api;
mod snapshots;

use std::path::{Path, PathBuf};

pub use api::{IterOptions, LevelStats, Snapshot, Stats};

use crate::error::{Error, Result};
use crate::options::{Options, WriteOptions};

/// An atomic group of puts and deletes.
pub use crate::wal::WriteBatch;

/// An open store. Cheap to share between threads (`&Db` is `Send + Sync`); all methods take
/// `&self`. Dropping it closes the store (see [`Db::close`] to see errors).
pub struct Db {
    path: PathBuf,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db").field("path", &self.path).finish()
    }
}

fn todo<T>() -> Result<T> {
    Err(Error::Unsupported("engine in progress".into()))
}

impl Db {
    /// Open (or create) the store in directory `path`.
    ///
    /// # Errors
    /// [`Error::Locked`] if another handle holds the store, [`Error::Corruption`] if its
    /// files are damaged, [`Error::InvalidArgument`] for bad options, [`Error::Io`].
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        options.validate()?;
        let _ = Db {
            path: path.as_ref().to_path_buf(),
        };
        todo()
    }
    /// The directory of the store.
    pub fn path(&self) -> &Path {
        &self.path
    }
    /// Set `key` to `value`.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put(key, value);
        self.write(b)
    }
    /// Delete `key` (a no-op if it is absent).
    pub fn delete(&self, key: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete(key);
        self.write(b)
    }
    /// Apply a batch atomically, without waiting for durability.
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        self.write_opt(batch, WriteOptions::default())
    }
    /// Apply a batch atomically; with `sync` it is durable when this returns.
    pub fn write_opt(&self, _batch: WriteBatch, _opts: WriteOptions) -> Result<()> {
        todo()
    }
    /// The value of `key`, if present.
    pub fn get(&self, _key: &[u8]) -> Result<Option<Vec<u8>>> {
        todo()
    }
    /// The value of `key` as of `snapshot`.
    pub fn get_at(&self, _key: &[u8], _snapshot: &Snapshot) -> Result<Option<Vec<u8>>> {
        todo()
    }
    /// A point-in-time view for consistent reads.
    pub fn snapshot(&self) -> Snapshot {
        unimplemented!()
    }
    /// An iterator of `(key, value)` pairs in key order; also double-ended.
    pub fn iter(&self, _opts: IterOptions) -> Result<DbIterator> {
        todo()
    }
    /// A positioned cursor with seek, next and prev.
    pub fn cursor(&self, _opts: IterOptions) -> Result<Cursor> {
        todo()
    }
    /// Write the memtable to a table file and wait until it is done.
    pub fn flush(&self) -> Result<()> {
        todo()
    }
    /// Compact every table overlapping `[begin, end]` (open ends: everything) down the tree.
    pub fn compact_range(&self, _begin: Option<&[u8]>, _end: Option<&[u8]>) -> Result<()> {
        todo()
    }
    /// Counters: bytes by cause, levels, write amplification.
    pub fn stats(&self) -> Stats {
        Stats::default()
    }
    /// A named property, e.g. `shale.num-files-at-level0`, `shale.stats`.
    pub fn property(&self, _name: &str) -> Option<String> {
        None
    }
    /// Close the store: stop background work and make the log durable.
    pub fn close(self) -> Result<()> {
        todo()
    }
}

/// Iterator over `(key, value)` pairs; see [`Db::iter`].
pub struct DbIterator {}

impl Iterator for DbIterator {
    type Item = Result<(Vec<u8>, Vec<u8>)>;
    fn next(&mut self) -> Option<Self::Item> {
        None
    }
}

impl DoubleEndedIterator for DbIterator {
    fn next_back(&mut self) -> Option<Self::Item> {
        None
    }
}

/// A positioned cursor; see [`Db::cursor`].
pub struct Cursor {}

impl Cursor {
    /// True when positioned on an entry.
    pub fn valid(&self) -> bool {
        false
    }
    /// Position on the first key.
    pub fn seek_to_first(&mut self) -> Result<()> {
        todo()
    }
    /// Position on the last key.
    pub fn seek_to_last(&mut self) -> Result<()> {
        todo()
    }
    /// Position on the first key `>= key`.
    pub fn seek(&mut self, _key: &[u8]) -> Result<()> {
        todo()
    }
    /// Position on the last key `<= key`.
    pub fn seek_for_prev(&mut self, _key: &[u8]) -> Result<()> {
        todo()
    }
    /// Move forward.
    pub fn next(&mut self) -> Result<()> {
        todo()
    }
    /// Move back.
    pub fn prev(&mut self) -> Result<()> {
        todo()
    }
    /// The current key. Requires `valid()`.
    pub fn key(&self) -> &[u8] {
        &[]
    }
    /// The current value. Requires `valid()`.
    pub fn value(&self) -> &[u8] {
        &[]
    }
}

/// Check every checksum of every file of the store at `path` without opening it for writing.
/// Returns a report of what was checked; corruption is an error naming file and offset.
pub fn verify(_path: impl AsRef<Path>, _options: Options) -> Result<VerifyReport> {
    todo()
}

/// What [`verify`] checked.
#[derive(Clone, Debug, Default)]
pub struct VerifyReport {
    /// Table files checked.
    pub tables: usize,
    /// Log files (WAL and MANIFEST) checked.
    pub logs: usize,
    /// Bytes read.
    pub bytes: u64,
    /// Entries seen in tables.
    pub entries: u64,
}
