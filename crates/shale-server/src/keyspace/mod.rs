//! The keyspace: Redis strings with expiry over one Shale store.
//!
//! Keys and values are laid out as [`format`] says. Expiry lives in the value's header:
//! a read never returns an expired key, and deletes it (lazy expiry); [`sweep`] walks the
//! keys in SCAN order and deletes expired ones nobody reads (active expiry); and the
//! store's compaction filter ([`expiry`]) drops an expired key from the files when a flush
//! or compaction writes it, with no read and no deletion (reclaim).
//!
//! Writes of one key are serialized by [`locks`]: a command that reads a key to decide
//! what to write holds its stripe from the read to the write. Thread-safe: one `Keyspace`
//! is shared by every connection.

pub mod cursor;
pub mod expiry;
pub mod format;
pub mod locks;
pub mod sweep;

use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use shale::ttl::{Clock, SystemClock};
use shale::{Db, DbIterator, IterOptions, Options, WriteBatch, WriteOptions};

use crate::config::SyncMode;
use cursor::CursorTable;
use format::Header;
use locks::{KeyGuard, KeyLocks};

/// The largest user key: the engine's limit less the prefix byte.
pub const MAX_USER_KEY: usize = shale::options::MAX_KEY_SIZE - 1;

/// The largest string value: the engine's value limit less the largest header.
pub const MAX_USER_VALUE: usize = shale::options::MAX_VALUE_SIZE - format::MAX_HEADER;

/// What can go wrong below the protocol.
#[derive(Debug)]
pub enum Error {
    /// The engine failed (I/O, corruption, a read-only store).
    Engine(shale::Error),
    /// A stored value this server cannot read.
    BadValue {
        /// The user key.
        key: Vec<u8>,
        /// What is wrong with it.
        detail: String,
    },
    /// A key over the engine's limit.
    KeyTooLarge(usize),
    /// The directory holds a store that this server did not create.
    NotServerStore(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Engine(e) => write!(f, "storage error: {e}"),
            Error::BadValue { key, detail } => write!(
                f,
                "the stored value of key '{}' is not in shale-server's format: {detail}",
                String::from_utf8_lossy(key)
            ),
            Error::KeyTooLarge(n) => write!(
                f,
                "key of {n} bytes is longer than Shale's limit of {MAX_USER_KEY} bytes"
            ),
            Error::NotServerStore(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}

impl From<shale::Error> for Error {
    fn from(e: shale::Error) -> Self {
        Error::Engine(e)
    }
}

/// Shorthand.
pub type Result<T> = std::result::Result<T, Error>;

/// A live value as stored: the engine's bytes, read once, and its decoded header.
#[derive(Debug, Clone)]
pub struct Entry {
    raw: Vec<u8>,
    header: Header,
}

impl Entry {
    fn decode(key: &[u8], raw: Vec<u8>) -> Result<Entry> {
        let header = format::decode_header(&raw).map_err(|detail| Error::BadValue {
            key: key.to_vec(),
            detail,
        })?;
        Ok(Entry { raw, header })
    }

    /// The string.
    pub fn value(&self) -> &[u8] {
        self.raw.get(self.header.payload_at..).unwrap_or_default()
    }

    /// The string, owned.
    pub fn into_value(mut self) -> Vec<u8> {
        self.raw.drain(..self.header.payload_at.min(self.raw.len()));
        self.raw
    }

    /// When the key expires (Unix milliseconds), if it does.
    pub fn expire_at(&self) -> Option<u64> {
        self.header.expire_at
    }

    /// True if the key has expired at `now`.
    pub fn expired(&self, now: u64) -> bool {
        self.header.expire_at.is_some_and(|t| t <= now)
    }
}

/// Writes of one command, applied atomically by [`Keyspace::commit`].
#[derive(Default)]
pub struct Writes {
    batch: WriteBatch,
    scratch: Vec<u8>,
    with_ttl: bool,
}

impl Writes {
    /// No writes yet.
    pub fn new() -> Writes {
        Writes::default()
    }

    /// Set `key` to `value`, expiring at `expire_at`.
    ///
    /// # Errors
    /// [`Error::KeyTooLarge`].
    pub fn put(&mut self, key: &[u8], value: &[u8], expire_at: Option<u64>) -> Result<()> {
        if key.len() > MAX_USER_KEY {
            return Err(Error::KeyTooLarge(key.len()));
        }
        format::encode_value(&mut self.scratch, value, expire_at);
        self.batch.put(&format::data_key(key), &self.scratch);
        self.with_ttl |= expire_at.is_some();
        Ok(())
    }

    /// Delete `key`.
    pub fn delete(&mut self, key: &[u8]) {
        self.batch.delete(&format::data_key(key));
    }

    /// True when nothing was added.
    pub fn is_empty(&self) -> bool {
        self.batch.is_empty()
    }
}

/// Keyspace counters for INFO.
#[derive(Default)]
pub struct Counters {
    /// Reads that found a key.
    pub hits: AtomicU64,
    /// Reads that found none.
    pub misses: AtomicU64,
    /// Keys deleted because they expired (lazily or by the sweep).
    pub expired: AtomicU64,
}

/// The store and what the server keeps beside it.
pub struct Keyspace {
    db: Db,
    locks: KeyLocks,
    sync: SyncMode,
    /// SCAN positions.
    pub cursors: CursorTable,
    /// INFO counters.
    pub counters: Counters,
    /// Set when a key with an expiry is written: the sweep has work.
    pub(crate) ttl_written: AtomicBool,
    /// Writes without a sync enter the engine one at a time. The engine's group commit
    /// wakes every waiting writer when a group ends; with no fsync to share, 50 writers
    /// waking each other cost more than the group saves (redis-benchmark SET at `-c 50`,
    /// `--sync none`: 14-15k/s without this lock, 22-28k/s with it; docs/benchmarks.md).
    unsynced_writer: parking_lot::Mutex<()>,
    /// Where expiry times are read (milliseconds since the Unix epoch).
    clock: Arc<dyn Clock>,
}

impl Keyspace {
    /// Open (or create) the store in `dir` with design `design` (`None`:
    /// `Options::default()`).
    ///
    /// # Errors
    /// The engine's, or [`Error::NotServerStore`] for a store with keys but without the
    /// server's format marker.
    pub fn open(dir: &Path, design: Option<&str>, sync: SyncMode) -> Result<Keyspace> {
        Keyspace::open_with_clock(dir, design, sync, Arc::new(SystemClock))
    }

    /// [`Keyspace::open`] with expiry read against `clock`. The store's compaction filter
    /// ([`expiry::ExpiryFilter`]) drops keys that expired by `clock`.
    ///
    /// # Errors
    /// As [`Keyspace::open`].
    pub fn open_with_clock(
        dir: &Path,
        design: Option<&str>,
        sync: SyncMode,
        clock: Arc<dyn Clock>,
    ) -> Result<Keyspace> {
        // Without a design, an existing store opens with the options it records.
        let mut options = match design {
            Some(p) => Options::preset(p)?,
            None if dir.join("CURRENT").exists() => shale::load_options(dir, Options::default())?,
            None => Options::default(),
        };
        options.compaction_filter = Some(Arc::new(expiry::ExpiryFilter::new(Arc::clone(&clock))));
        let db = Db::open(dir, options)?;
        match db.get(format::FORMAT_KEY)? {
            Some(v) if v == format::FORMAT_VALUE => {}
            Some(v) => {
                return Err(Error::NotServerStore(format!(
                    "{} holds shale-server format {:?}; this server reads {:?}",
                    dir.display(),
                    String::from_utf8_lossy(&v),
                    String::from_utf8_lossy(format::FORMAT_VALUE)
                )));
            }
            None => {
                if db.iter(IterOptions::default())?.next().is_some() {
                    return Err(Error::NotServerStore(format!(
                        "{} holds a Shale store that shale-server did not create (no {:?} key); \
                         the server keeps its own layout (docs/server.md) and will not mix it in",
                        dir.display(),
                        String::from_utf8_lossy(format::FORMAT_KEY)
                    )));
                }
                let mut b = WriteBatch::new();
                b.put(format::FORMAT_KEY, format::FORMAT_VALUE);
                db.write_opt(b, WriteOptions { sync: true })?;
            }
        }
        Ok(Keyspace {
            db,
            locks: KeyLocks::new(),
            sync,
            cursors: CursorTable::new(),
            counters: Counters::default(),
            // Keys with an expiry may be in the store from an earlier run.
            ttl_written: AtomicBool::new(true),
            unsynced_writer: parking_lot::Mutex::new(()),
            clock,
        })
    }

    /// Close the store: the engine syncs its log.
    ///
    /// # Errors
    /// The engine's.
    pub fn close(self) -> Result<()> {
        Ok(self.db.close()?)
    }

    /// The engine (for INFO's statistics).
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// Milliseconds since the Unix epoch on the server's clock: the unit of every expiry.
    pub fn now_ms(&self) -> u64 {
        self.clock.now_millis()
    }

    /// The durability mode.
    pub fn sync_mode(&self) -> SyncMode {
        self.sync
    }

    /// Read `key` without a lock. An expired key reads as absent and is deleted.
    ///
    /// REQUIRES: the caller holds no key lock (the deletion takes one).
    ///
    /// # Errors
    /// The engine's, or [`Error::BadValue`].
    pub fn get(&self, key: &[u8]) -> Result<Option<Entry>> {
        let found = self.read(key)?;
        let now = self.now_ms();
        match found {
            Some(e) if e.expired(now) => {
                self.delete_if_expired(key)?;
                self.counters.misses.fetch_add(1, Ordering::Relaxed);
                Ok(None)
            }
            Some(e) => {
                self.counters.hits.fetch_add(1, Ordering::Relaxed);
                Ok(Some(e))
            }
            None => {
                self.counters.misses.fetch_add(1, Ordering::Relaxed);
                Ok(None)
            }
        }
    }

    /// Read several keys at one point in time (MGET). Expired keys read as absent and are
    /// deleted afterwards.
    ///
    /// REQUIRES: the caller holds no key lock.
    ///
    /// # Errors
    /// As [`Keyspace::get`].
    pub fn get_many(&self, keys: &[&[u8]]) -> Result<Vec<Option<Entry>>> {
        let snap = self.db.snapshot();
        let now = self.now_ms();
        let mut out = Vec::with_capacity(keys.len());
        let mut expired = Vec::new();
        for &key in keys {
            let raw = if key.len() > MAX_USER_KEY {
                None
            } else {
                self.db.get_at(&format::data_key(key), &snap)?
            };
            let e = match raw {
                Some(raw) => Some(Entry::decode(key, raw)?),
                None => None,
            };
            match e {
                Some(e) if e.expired(now) => {
                    expired.push(key);
                    out.push(None);
                }
                e => out.push(e),
            }
        }
        drop(snap);
        let hits = out.iter().filter(|e| e.is_some()).count() as u64;
        self.counters.hits.fetch_add(hits, Ordering::Relaxed);
        self.counters
            .misses
            .fetch_add(out.len() as u64 - hits, Ordering::Relaxed);
        for key in expired {
            self.delete_if_expired(key)?;
        }
        Ok(out)
    }

    /// Read `key` under its lock, for a read-modify-write. An expired key reads as absent
    /// (the caller's write replaces it, or a later read deletes it).
    ///
    /// # Errors
    /// As [`Keyspace::get`].
    pub fn get_locked(&self, _guard: &KeyGuard<'_>, key: &[u8]) -> Result<Option<Entry>> {
        let now = self.now_ms();
        Ok(self.read(key)?.filter(|e| !e.expired(now)))
    }

    fn read(&self, key: &[u8]) -> Result<Option<Entry>> {
        if key.len() > MAX_USER_KEY {
            return Ok(None);
        }
        match self.db.get(&format::data_key(key))? {
            Some(raw) => Ok(Some(Entry::decode(key, raw)?)),
            None => Ok(None),
        }
    }

    /// Delete `key` if it is (still) expired. Returns true if it deleted it.
    ///
    /// REQUIRES: the caller holds no key lock.
    ///
    /// # Errors
    /// The engine's.
    pub fn delete_if_expired(&self, key: &[u8]) -> Result<bool> {
        let _g = self.locks.lock(key);
        match self.read(key)? {
            Some(e) if e.expired(self.now_ms()) => {
                // Not synced: if the deletion is lost, the key is still expired.
                self.db.delete(&format::data_key(key))?;
                self.counters.expired.fetch_add(1, Ordering::Relaxed);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Lock `key` for a read-modify-write.
    pub fn lock(&self, key: &[u8]) -> KeyGuard<'_> {
        self.locks.lock(key)
    }

    /// Lock several keys.
    pub fn lock_many<'k>(&self, keys: impl IntoIterator<Item = &'k [u8]>) -> KeyGuard<'_> {
        self.locks.lock_many(keys)
    }

    /// Apply `writes` atomically, synced if the mode is `always`. Returns true when the
    /// write still needs a sync to be durable (mode `batch`: see [`Keyspace::sync_log`]).
    ///
    /// REQUIRES: the caller holds the locks of the written keys.
    ///
    /// # Errors
    /// The engine's.
    pub fn commit(&self, writes: Writes) -> Result<bool> {
        if writes.is_empty() {
            return Ok(false);
        }
        if writes.with_ttl {
            self.ttl_written.store(true, Ordering::Relaxed);
        }
        let sync = self.sync == SyncMode::Always;
        let _one = (!sync).then(|| self.unsynced_writer.lock());
        self.db.write_opt(writes.batch, WriteOptions { sync })?;
        Ok(self.sync == SyncMode::Batch)
    }

    /// Make every write committed so far durable (the engine's `sync_wal`).
    ///
    /// # Errors
    /// The engine's.
    pub fn sync_log(&self) -> Result<()> {
        Ok(self.db.sync_wal()?)
    }

    /// Entries (expired ones included) whose key starts with `prefix`, from the first key
    /// `>= from`, in key order, at one point in time.
    ///
    /// # Errors
    /// The engine's.
    pub fn entries(&self, from: &[u8], prefix: &[u8]) -> Result<Entries> {
        let lower = if from > prefix { from } else { prefix };
        let it = self.db.iter(IterOptions::range(
            format::data_key(lower),
            format::data_prefix_end(prefix),
        ))?;
        Ok(Entries { it })
    }

    /// Delete every key (FLUSHDB). Writers wait until it is done.
    ///
    /// # Errors
    /// The engine's.
    pub fn clear(&self) -> Result<u64> {
        let _all = self.locks.lock_all();
        let mut deleted = 0;
        let mut batch = WriteBatch::new();
        for item in self.db.iter(IterOptions::range(
            vec![format::DATA],
            vec![format::DATA + 1],
        ))? {
            let (k, _) = item?;
            batch.delete(&k);
            deleted += 1;
            if batch.len() >= 1024 {
                self.db.write(std::mem::take(&mut batch))?;
            }
        }
        self.db.write(batch)?;
        if self.sync != SyncMode::None {
            self.db.sync_wal()?;
        }
        Ok(deleted)
    }
}

/// See [`Keyspace::entries`].
pub struct Entries {
    it: DbIterator,
}

impl Iterator for Entries {
    /// A user key and its entry.
    type Item = Result<(Vec<u8>, Entry)>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = self.it.next()?;
        Some(item.map_err(Error::from).and_then(|(k, v)| {
            let key = k.get(1..).unwrap_or_default().to_vec();
            let e = Entry::decode(&key, v)?;
            Ok((key, e))
        }))
    }
}
