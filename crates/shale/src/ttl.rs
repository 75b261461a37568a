//! Expiring values over a store: [`TtlDb`], after RocksDB's `DBWithTTL`, built on the
//! compaction filter ([`crate::options::filter`]).
//!
//! Every value is stored with its expiry time appended (`docs/format/ttl.md`): 8 bytes,
//! little-endian milliseconds since the Unix epoch, `u64::MAX` for a value that never
//! expires. A write gives its own time to live ([`TtlDb::put_with_ttl`]) or takes the
//! store-wide one ([`TtlOptions::default_ttl`], none by default: such values never expire).
//! The expiry is absolute, fixed when the value is written: changing the store-wide TTL
//! later changes only new writes (RocksDB stores the write time and applies the TTL of the
//! open; Redis and this store store the deadline, which lets each write choose its own).
//!
//! **Expired entries are never returned**: every read (`get`, `get_at`, iterators, at a
//! snapshot or not) checks the expiry against the clock ([`TtlOptions::clock`]) and treats
//! an expired value as absent, even before any compaction. **Compaction reclaims them**: the
//! store runs a [`TtlFilter`] that removes the newest version of a key once it has expired
//! (a version a live snapshot sees is kept until the snapshot is released, but reads through
//! the snapshot still hide it when expired). An expired newest version hides the older
//! versions of its key, as a deletion would: reads never fall back to them, and the filter's
//! removal is a tombstone wherever older versions may lie below.
//!
//! The store records `expiring_values=true` in its options record, so a plain
//! [`Db::open`] refuses it (and `TtlDb::open` refuses a store of plain values). Opened
//! plainly with `load_options`, the values read with their suffix.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::error::{Error, Result};
use crate::options::filter::{CompactionFilter, Decision, FilterContext};
use crate::{Db, DbIterator, IterOptions, Options, Snapshot, WriteBatch, WriteOptions};

/// Bytes of the expiry suffix.
pub const SUFFIX_LEN: usize = 8;

/// The expiry of a value that never expires.
pub const NEVER: u64 = u64::MAX;

/// Where the time comes from: milliseconds since the Unix epoch.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// The time now.
    fn now_millis(&self) -> u64;
}

/// The system clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_millis(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }
}

/// A clock that moves only when told (tests, simulations).
#[derive(Debug, Default)]
pub struct ManualClock(AtomicU64);

impl ManualClock {
    /// A clock at `millis`.
    pub fn new(millis: u64) -> ManualClock {
        ManualClock(AtomicU64::new(millis))
    }
    /// Set the time.
    pub fn set(&self, millis: u64) {
        self.0.store(millis, Ordering::SeqCst);
    }
    /// Move the time forward by `by`.
    pub fn advance(&self, by: Duration) {
        let ms = u64::try_from(by.as_millis()).unwrap_or(u64::MAX);
        let _ = self
            .0
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |t| {
                Some(t.saturating_add(ms))
            });
    }
}

impl Clock for ManualClock {
    fn now_millis(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// Options of a [`TtlDb`] beside the store's [`Options`].
#[derive(Clone, Debug)]
pub struct TtlOptions {
    /// The time to live of a value written without one (`None`: it never expires).
    pub default_ttl: Option<Duration>,
    /// The clock expiry is checked against. Default: [`SystemClock`].
    pub clock: Arc<dyn Clock>,
}

impl Default for TtlOptions {
    fn default() -> Self {
        TtlOptions {
            default_ttl: None,
            clock: Arc::new(SystemClock),
        }
    }
}

/// `value` with the expiry suffix.
pub fn encode(value: &[u8], expires_at: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(value.len() + SUFFIX_LEN);
    v.extend_from_slice(value);
    v.extend_from_slice(&expires_at.to_le_bytes());
    v
}

/// The user's value and its expiry, or `None` for bytes shorter than the suffix.
pub fn decode(stored: &[u8]) -> Option<(&[u8], u64)> {
    let at = stored.len().checked_sub(SUFFIX_LEN)?;
    let (value, suffix) = stored.split_at(at);
    let t: [u8; SUFFIX_LEN] = suffix.try_into().ok()?;
    Some((value, u64::from_le_bytes(t)))
}

/// The compaction filter of a [`TtlDb`]: removes expired values; passes the others, without
/// their suffix, to the user's filter if there is one (a value it changes keeps its expiry).
#[derive(Debug)]
pub struct TtlFilter {
    clock: Arc<dyn Clock>,
    inner: Option<Arc<dyn CompactionFilter>>,
}

impl TtlFilter {
    /// A filter checking expiry against `clock`, then asking `inner`.
    pub fn new(clock: Arc<dyn Clock>, inner: Option<Arc<dyn CompactionFilter>>) -> TtlFilter {
        TtlFilter { clock, inner }
    }
}

impl CompactionFilter for TtlFilter {
    fn filter(&self, context: &FilterContext, key: &[u8], value: &[u8]) -> Decision {
        // A value without a suffix is not ours to judge: reads report it.
        let Some((user, expires_at)) = decode(value) else {
            return Decision::Keep;
        };
        if expires_at <= self.clock.now_millis() {
            return Decision::Remove;
        }
        match &self.inner {
            None => Decision::Keep,
            Some(f) => match f.filter(context, key, user) {
                Decision::ChangeValue(v) => Decision::ChangeValue(encode(&v, expires_at)),
                d => d,
            },
        }
    }

    fn name(&self) -> &str {
        "TTL filter"
    }
}

/// Writes applied atomically by [`TtlDb::write`]: each put with its own time to live or the
/// store's default.
#[derive(Debug, Default)]
pub struct TtlBatch {
    ops: Vec<BatchOp>,
}

/// One write of a [`TtlBatch`].
#[derive(Debug)]
enum BatchOp {
    /// Key, value, time to live (`None`: the store's default).
    Put(Vec<u8>, Vec<u8>, Option<Duration>),
    Delete(Vec<u8>),
}

impl TtlBatch {
    /// An empty batch.
    pub fn new() -> TtlBatch {
        TtlBatch::default()
    }
    /// Set `key` to `value` with the store's default time to live.
    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        self.ops
            .push(BatchOp::Put(key.to_vec(), value.to_vec(), None));
    }
    /// Set `key` to `value`, expiring `ttl` after the batch is written.
    pub fn put_with_ttl(&mut self, key: &[u8], value: &[u8], ttl: Duration) {
        self.ops
            .push(BatchOp::Put(key.to_vec(), value.to_vec(), Some(ttl)));
    }
    /// Delete `key`.
    pub fn delete(&mut self, key: &[u8]) {
        self.ops.push(BatchOp::Delete(key.to_vec()));
    }
}

/// A store whose values expire; see the module documentation.
#[derive(Debug)]
pub struct TtlDb {
    db: Db,
    default_ttl: Option<Duration>,
    clock: Arc<dyn Clock>,
}

impl TtlDb {
    /// Open (or create) the store of expiring values in `path`. `options.compaction_filter`,
    /// if set, is asked about the values that have not expired (without their suffix).
    ///
    /// # Errors
    /// As [`Db::open`]; [`Error::InvalidArgument`] for a store of plain values.
    pub fn open(path: impl AsRef<Path>, options: Options, ttl: TtlOptions) -> Result<TtlDb> {
        let mut options = options;
        options.expiring_values = true;
        let inner = options.compaction_filter.take();
        options.compaction_filter = Some(Arc::new(TtlFilter::new(Arc::clone(&ttl.clock), inner)));
        let db = Db::open(path, options)?;
        Ok(TtlDb {
            db,
            default_ttl: ttl.default_ttl,
            clock: ttl.clock,
        })
    }

    /// The store underneath (statistics, properties, files). Its reads return the stored
    /// bytes, suffix included, expired or not.
    pub fn db(&self) -> &Db {
        &self.db
    }

    fn expiry(&self, ttl: Option<Duration>) -> u64 {
        match ttl.or(self.default_ttl) {
            None => NEVER,
            Some(d) => {
                let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
                // Saturate below NEVER: a finite TTL always expires.
                self.clock.now_millis().saturating_add(ms).min(NEVER - 1)
            }
        }
    }

    /// Set `key` to `value` with the store's default time to live.
    ///
    /// # Errors
    /// As [`Db::put`] (a value within [`SUFFIX_LEN`] bytes of the limit is too large).
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.db.put(key, &encode(value, self.expiry(None)))
    }

    /// Set `key` to `value`, expiring `ttl` from now.
    ///
    /// # Errors
    /// As [`TtlDb::put`].
    pub fn put_with_ttl(&self, key: &[u8], value: &[u8], ttl: Duration) -> Result<()> {
        self.db.put(key, &encode(value, self.expiry(Some(ttl))))
    }

    /// Set `key` to `value`, expiring at `expires_at` (milliseconds since the Unix epoch on
    /// the store's clock; [`NEVER`] for never).
    ///
    /// # Errors
    /// As [`TtlDb::put`].
    pub fn put_expiring_at(&self, key: &[u8], value: &[u8], expires_at: u64) -> Result<()> {
        self.db.put(key, &encode(value, expires_at))
    }

    /// Delete `key`.
    ///
    /// # Errors
    /// As [`Db::delete`].
    pub fn delete(&self, key: &[u8]) -> Result<()> {
        self.db.delete(key)
    }

    /// Apply `batch` atomically (`sync` as [`WriteOptions::sync`]).
    ///
    /// # Errors
    /// As [`Db::write_opt`].
    pub fn write(&self, batch: TtlBatch, sync: bool) -> Result<()> {
        let mut b = WriteBatch::new();
        for op in batch.ops {
            match op {
                BatchOp::Put(key, value, ttl) => b.put(&key, &encode(&value, self.expiry(ttl))),
                BatchOp::Delete(key) => b.delete(&key),
            }
        }
        self.db.write_opt(b, WriteOptions { sync })
    }

    /// The value of `key` and when it expires, if present and not expired.
    fn live(&self, key: &[u8], stored: Option<Vec<u8>>) -> Result<Option<(Vec<u8>, u64)>> {
        let Some(mut stored) = stored else {
            return Ok(None);
        };
        let (len, expires_at) = match decode(&stored) {
            Some((v, t)) => (v.len(), t),
            None => return Err(short_value(&self.db, key, stored.len())),
        };
        if expires_at <= self.clock.now_millis() {
            return Ok(None);
        }
        stored.truncate(len);
        Ok(Some((stored, expires_at)))
    }

    /// The value of `key`, if present and not expired.
    ///
    /// # Errors
    /// As [`Db::get`]; [`Error::Corruption`] for a stored value without its suffix.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.live(key, self.db.get(key)?)?.map(|(v, _)| v))
    }

    /// The value of `key` and its expiry time ([`NEVER`] for none), if present and not
    /// expired.
    ///
    /// # Errors
    /// As [`TtlDb::get`].
    pub fn get_with_expiry(&self, key: &[u8]) -> Result<Option<(Vec<u8>, u64)>> {
        self.live(key, self.db.get(key)?)
    }

    /// The value of `key` as of `snapshot`, if it has not expired (by the clock now).
    ///
    /// # Errors
    /// As [`TtlDb::get`].
    pub fn get_at(&self, key: &[u8], snapshot: &Snapshot) -> Result<Option<Vec<u8>>> {
        Ok(self
            .live(key, self.db.get_at(key, snapshot)?)?
            .map(|(v, _)| v))
    }

    /// A point-in-time view; expiry is still checked against the clock when it is read.
    pub fn snapshot(&self) -> Snapshot {
        self.db.snapshot()
    }

    /// The `(key, value)` pairs that have not expired, in key order (double-ended). Expiry
    /// is checked against the clock as each entry is reached.
    ///
    /// # Errors
    /// As [`Db::iter`].
    pub fn iter(&self, options: IterOptions) -> Result<TtlIterator> {
        Ok(TtlIterator {
            inner: self.db.iter(options)?,
            clock: Arc::clone(&self.clock),
            dir: self.db.path().to_path_buf(),
        })
    }

    /// As [`Db::flush`].
    ///
    /// # Errors
    /// As [`Db::flush`].
    pub fn flush(&self) -> Result<()> {
        self.db.flush()
    }

    /// As [`Db::compact_range`]: expired values in the range are removed from the files.
    ///
    /// # Errors
    /// As [`Db::compact_range`].
    pub fn compact_range(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.db.compact_range(begin, end)
    }

    /// Close the store.
    ///
    /// # Errors
    /// As [`Db::close`].
    pub fn close(self) -> Result<()> {
        self.db.close()
    }
}

fn short_value(db: &Db, key: &[u8], len: usize) -> Error {
    Error::corruption(
        db.path(),
        0,
        format!(
            "the value of key {:?} is {len} bytes, shorter than its {SUFFIX_LEN}-byte expiry \
             (a store of expiring values holds a value written without one)",
            String::from_utf8_lossy(key)
        ),
    )
}

/// See [`TtlDb::iter`].
pub struct TtlIterator {
    inner: DbIterator,
    clock: Arc<dyn Clock>,
    dir: std::path::PathBuf,
}

impl TtlIterator {
    /// The item for one stored entry: `None` to skip an expired one.
    fn visit(&self, item: Result<(Vec<u8>, Vec<u8>)>) -> Option<Result<(Vec<u8>, Vec<u8>)>> {
        let (key, mut stored) = match item {
            Ok(kv) => kv,
            Err(e) => return Some(Err(e)),
        };
        let (len, expires_at) = match decode(&stored) {
            Some((v, t)) => (v.len(), t),
            None => {
                return Some(Err(Error::corruption(
                    &self.dir,
                    0,
                    format!(
                        "the value of key {:?} is {} bytes, shorter than its {SUFFIX_LEN}-byte \
                         expiry",
                        String::from_utf8_lossy(&key),
                        stored.len()
                    ),
                )));
            }
        };
        if expires_at <= self.clock.now_millis() {
            return None;
        }
        stored.truncate(len);
        Some(Ok((key, stored)))
    }
}

impl Iterator for TtlIterator {
    type Item = Result<(Vec<u8>, Vec<u8>)>;
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let item = self.inner.next()?;
            if let Some(out) = self.visit(item) {
                return Some(out);
            }
        }
    }
}

impl DoubleEndedIterator for TtlIterator {
    fn next_back(&mut self) -> Option<Self::Item> {
        loop {
            let item = self.inner.next_back()?;
            if let Some(out) = self.visit(item) {
                return Some(out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffix_round_trips() {
        let v = encode(b"red", 0x0102_0304_0506_0708);
        assert_eq!(v, b"red\x08\x07\x06\x05\x04\x03\x02\x01");
        assert_eq!(decode(&v), Some((&b"red"[..], 0x0102_0304_0506_0708)));
        assert_eq!(decode(&encode(b"", NEVER)), Some((&b""[..], NEVER)));
        assert_eq!(decode(b"1234567"), None);
    }
}
