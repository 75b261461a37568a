//! The read path: point lookups, cursors and iterators.
//!
//! A read first clones the super version, then fixes its sequence number (the snapshot's,
//! or the last published one). In that order the newest version of each key at or below the
//! sequence number is in the clone:
//! - flushes and compactions drop a version only when a newer one at or below the last
//!   published sequence number *at that time* exists, and that time precedes the clone, so
//!   the newer one is in the clone too and is at or below our sequence number;
//! - a write published after the clone is either in a memtable of the clone or in a newer
//!   memtable, and a newer memtable holds only writes newer than everything in the clone.
//!
//! The other order is wrong: between reading the sequence number and cloning, a flush may
//! drop the version the read should see, because a newer write shadows it.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{DbInner, IterOptions, ReadOptions, Snapshot, SuperVersion};
use crate::env::ReadCause;
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::iter::db_iter::DbIterOptions;
use crate::iter::merging::MergingIterator;
use crate::iter::prefetch::{Prefetch, PrefetchCursor, PrefetchEntries, Resolve};
use crate::key::{SeqNo, ValueKind, parse_internal_key, seek_key};
use crate::layout::ReadContext;
use crate::memory::MemLookup;
use crate::rangedel::filter::RangeDelFilter;
use crate::table::format::TableRead;
use crate::values::{CacheFill, ResolveMemo, ValueBytes, ValueStore};

pub(crate) fn get(
    inner: &DbInner,
    key: &[u8],
    snapshot: Option<SeqNo>,
    options: ReadOptions,
) -> Result<Option<Vec<u8>>> {
    let sv = inner.super_version();
    let seq = snapshot.unwrap_or_else(|| inner.last_seq.load(Ordering::Acquire));
    match lookup(inner, &sv, key, seq, table_read(ReadCause::Get, options))? {
        None => Ok(None),
        Some((ValueKind::Value, v)) => Ok(Some(v)),
        // A value a memtable entry carries beside its pointer: the entry's copy, without
        // a second one.
        Some((kind, mut v))
            if let Some(at) = inner.values.carried_at().and_then(|f| f(key, kind, &v)) =>
        {
            v.drain(..at);
            Ok(Some(v))
        }
        Some((kind, v)) => Ok(Some(
            inner
                .values
                .resolve(
                    key,
                    kind,
                    &v,
                    ReadCause::Get,
                    CacheFill::of(options.fill_cache, false),
                )?
                .into_owned(),
        )),
    }
}

/// The stored entry a reader at `seq` sees for `key` in `sv` (kind and stored bytes: a
/// value or a pointer), or `None` when it sees none or a delete, point or range.
pub(crate) fn lookup(
    inner: &DbInner,
    sv: &SuperVersion,
    key: &[u8],
    seq: SeqNo,
    read: TableRead,
) -> Result<Option<(ValueKind, Vec<u8>)>> {
    // A range tombstone hides every entry older than it: the newest entry of the key is
    // then needed with its sequence number (not only its kind), which memtable gets do not
    // give, so the memtables are read by seeking their iterators.
    let hidden_below = if sv.has_range_dels() {
        sv.max_range_del(key, seq)
    } else {
        None
    };
    let seek = seek_key(key, seq);
    for mem in std::iter::once(&sv.mem).chain(sv.imms.iter()) {
        let Some(below) = hidden_below else {
            match mem.get(key, seq) {
                Some(MemLookup::Found(kind, v)) => return Ok(Some((kind, v))),
                Some(MemLookup::Deleted) => return Ok(None),
                None => continue,
            }
        };
        let mut it = Arc::clone(mem).iter();
        it.seek(&seek)?;
        if !it.valid() {
            continue;
        }
        let parsed = parse_internal_key(it.key())
            .map_err(|d| Error::corruption(&inner.dir, 0, format!("memtable entry: {d}")))?;
        if parsed.user_key != key {
            continue;
        }
        if parsed.seq < below || parsed.kind == ValueKind::Delete {
            return Ok(None);
        }
        return Ok(Some((parsed.kind, it.value().to_vec())));
    }
    let ctx = ReadContext {
        tables: &inner.tables,
        read,
    };
    let found = inner.layout.get(&sv.version, &ctx, key, &seek)?;
    if inner.layout.take_compaction_wanted() {
        wake_compaction(inner);
    }
    match found {
        None => Ok(None),
        Some((ikey, value)) => {
            let parsed = parse_internal_key(&ikey)
                .map_err(|d| Error::corruption(&inner.dir, 0, format!("lookup of a key: {d}")))?;
            if hidden_below.is_some_and(|below| parsed.seq < below) {
                return Ok(None);
            }
            match parsed.kind {
                ValueKind::Delete => Ok(None),
                kind => Ok(Some((kind, value))),
            }
        }
    }
}

/// Everything an open iterator keeps alive: the memtables and version it reads, and the
/// snapshot it reads at. Shared with the iterator's value resolver, so that a prefetch job
/// still queued or running after the iterator is dropped keeps them too: the value log
/// frees a collected prefix only once every version and snapshot that may point into it
/// is gone (`value_jobs::reap`), and such a job still reads a pointer of that version.
struct Pinned {
    _sv: Arc<SuperVersion>,
    _snapshot: Option<Snapshot>,
}

/// The merge of every source of `sv`, without the entries range tombstones hide from a
/// reader at `seq` (each source filtered on its own: [`RangeDelFilter`]).
fn merged(
    inner: &DbInner,
    sv: &Arc<SuperVersion>,
    seq: SeqNo,
    read: TableRead,
) -> Result<MergingIterator> {
    let mut children: Vec<Box<dyn InternalIterator>> = Vec::with_capacity(2 + sv.imms.len());
    children.push(Arc::clone(&sv.mem).iter());
    for m in &sv.imms {
        children.push(Arc::clone(m).iter());
    }
    let ctx = ReadContext {
        tables: &inner.tables,
        read,
    };
    children.extend(inner.layout.iterators(&sv.version, &ctx)?);
    if sv.has_range_dels() {
        let dels = Arc::new(
            sv.version
                .range_dels()
                .with(sv.range_dels.tombstones().iter().cloned()),
        );
        children = children
            .into_iter()
            .map(|c| {
                Box::new(RangeDelFilter::new(c, Arc::clone(&dels), seq))
                    as Box<dyn InternalIterator>
            })
            .collect();
    }
    Ok(MergingIterator::new(children))
}

/// How the tables are read for `cause` with a reader's `options`.
fn table_read(cause: ReadCause, options: ReadOptions) -> TableRead {
    TableRead {
        cause,
        verify_checksums: options.verify_checksums,
        fill_cache: options.fill_cache,
    }
}

/// The sequence number, super version, iterator options, pins and table reads of an
/// iterator with `options`.
fn prepare(
    inner: &DbInner,
    options: IterOptions,
) -> (
    SeqNo,
    Arc<SuperVersion>,
    DbIterOptions,
    Arc<Pinned>,
    TableRead,
) {
    let read = table_read(ReadCause::Scan, options.read);
    let sv = inner.super_version();
    let seq = match &options.snapshot {
        Some(s) => s.sequence(),
        None => inner.last_seq.load(Ordering::Acquire),
    };
    let opts = DbIterOptions {
        snapshot: seq,
        lower_bound: options.lower_bound,
        upper_bound: options.upper_bound,
        prefix: options.prefix,
    };
    let pinned = Arc::new(Pinned {
        _sv: Arc::clone(&sv),
        _snapshot: options.snapshot,
    });
    (seq, sv, opts, pinned, read)
}

/// The store's value placement as a [`Resolve`], for one iterator: it pins what the
/// iterator reads (see [`Pinned`]) for as long as a prefetch job holds it.
struct PlacementResolver {
    values: Arc<dyn ValueStore>,
    /// The iterator's `ReadOptions::fill_cache`, for its values.
    fill: CacheFill,
    _pinned: Arc<Pinned>,
}

impl Resolve for PlacementResolver {
    fn resolve(&self, key: &[u8], kind: ValueKind, stored: &[u8]) -> Result<ValueBytes<'static>> {
        // The placement checks that the record it reads belongs to `key`. Its reads count
        // as a scan's value reads, apart from point lookups and the scan's table blocks.
        Ok(self
            .values
            .resolve(key, kind, stored, ReadCause::ScanValue, self.fill)?
            .into_static())
    }

    fn carried_at(&self) -> Option<crate::iter::CarriedAt> {
        self.values.carried_at()
    }

    fn resolve_in(
        &self,
        memo: &mut ResolveMemo,
        key: &[u8],
        kind: ValueKind,
        stored: &[u8],
    ) -> Result<ValueBytes<'static>> {
        Ok(self
            .values
            .resolve_in(memo, key, kind, stored, ReadCause::ScanValue, self.fill)?
            .into_static())
    }
}

fn resolver(inner: &DbInner, pinned: &Arc<Pinned>, read: TableRead) -> Arc<dyn Resolve> {
    Arc::new(PlacementResolver {
        values: Arc::clone(&inner.values),
        fill: CacheFill::of(read.fill_cache, true),
        _pinned: Arc::clone(pinned),
    })
}

pub(crate) fn cursor(
    inner: &Arc<DbInner>,
    options: IterOptions,
    prefetch: Option<Prefetch>,
) -> Result<Cursor> {
    let (seq, sv, opts, pinned, read) = prepare(inner, options);
    let it = merged(inner, &sv, seq, read)?;
    let (lower, upper) = bound_seeks(&opts);
    Ok(Cursor {
        it: PrefetchCursor::new(it, opts, resolver(inner, &pinned, read), prefetch),
        hooks: ReadHooks::new(inner, &sv),
        lower,
        upper,
        _pinned: pinned,
    })
}

/// Where an iterator with `opts` seeks when it starts at its lower end (the larger of the
/// lower bound and the prefix) and at its upper end (the smaller of the upper bound and the
/// first key past the prefix); `None` where it starts from the store's first or last key
/// instead.
fn bound_seeks(opts: &DbIterOptions) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
    let lower = opts.lower_bound.iter().chain(&opts.prefix).max().cloned();
    let past_prefix = opts
        .prefix
        .as_deref()
        .and_then(crate::iter::db_iter::prefix_successor);
    let upper = opts.upper_bound.iter().chain(&past_prefix).min().cloned();
    (lower, upper)
}

/// A user iterator reports a sample of its reads about once per this many bytes of the
/// entries it reads (LevelDB's `kReadBytesPeriod`): the gaps are drawn uniformly from
/// `0..2 * READ_SAMPLE_BYTES`.
const READ_SAMPLE_BYTES: i64 = 1 << 20;

/// What a user iterator tells the layout about its reads, so that layouts can compact what
/// reads keep paying for (FLSM guards, leveled tables), waking the compaction thread when
/// the layout asks for it: where each seek lands ([`crate::layout::Layout::note_seek`]:
/// cursors at every seek and at a bounded `seek_to_first`/`seek_to_last`, iterators at the
/// first step from a bound in each direction), and a sample of the entries read (LevelDB's
/// read sampling, [`crate::layout::Layout::note_read_sample`]).
struct ReadHooks {
    inner: std::sync::Weak<DbInner>,
    version: Arc<crate::version::Version>,
    /// Bytes left to read before the next sample (LevelDB's `bytes_until_read_sampling_`).
    until_sample: i64,
    /// State of the generator of the gaps between samples.
    rng: u64,
}

impl ReadHooks {
    fn new(inner: &Arc<DbInner>, sv: &Arc<SuperVersion>) -> ReadHooks {
        // Each iterator draws its own gaps, from a per-process sequence of seeds (LevelDB
        // seeds each iterator with `++seed_`).
        static SEED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let rng = SEED
            .fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed)
            .wrapping_add(0x2545_f491_4f6c_dd1d);
        let mut hooks = ReadHooks {
            inner: Arc::downgrade(inner),
            version: Arc::clone(&sv.version),
            until_sample: 0,
            rng,
        };
        hooks.until_sample = hooks.gap();
        hooks
    }

    /// The next gap between samples: uniform in `0..2 * READ_SAMPLE_BYTES`.
    fn gap(&mut self) -> i64 {
        // xorshift64*
        let mut x = self.rng | 1;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        (x.wrapping_mul(0x2545_f491_4f6c_dd1d) % (2 * READ_SAMPLE_BYTES as u64)) as i64
    }

    /// Tell the layout with `note`, and wake compaction when it asks.
    fn tell(
        &self,
        key: &[u8],
        note: fn(&dyn crate::layout::Layout, &crate::version::Version, &[u8]) -> bool,
    ) {
        if let Some(inner) = self.inner.upgrade()
            && note(inner.layout.as_ref(), &self.version, key)
        {
            wake_compaction(&inner);
        }
    }

    /// A seek lands at `key`.
    fn seek(&self, key: &[u8]) {
        self.tell(key, |l, v, k| l.note_seek(v, k));
    }

    /// The iterator read the entry of `key` with a value of `value_len` bytes.
    fn read(&mut self, key: &[u8], value_len: usize) {
        self.until_sample -= (key.len() + value_len) as i64;
        while self.until_sample < 0 {
            self.until_sample += self.gap().max(1);
            self.tell(key, |l, v, k| l.note_read_sample(v, k));
        }
    }
}

/// Ask the compaction thread to run the picker (a read made the layout want a compaction).
fn wake_compaction(inner: &DbInner) {
    let mut bg = inner.bg.lock();
    bg.compaction_wanted = true;
    inner.bg_cv.notify_all();
}

pub(crate) fn iter(
    inner: &Arc<DbInner>,
    options: IterOptions,
    prefetch: Option<Prefetch>,
) -> Result<DbIterator> {
    let (seq, sv, opts, pinned, read) = prepare(inner, options);
    let front = merged(inner, &sv, seq, read)?;
    let back = merged(inner, &sv, seq, read)?;
    let (front_seek, back_seek) = bound_seeks(&opts);
    Ok(DbIterator {
        entries: PrefetchEntries::new(front, back, opts, resolver(inner, &pinned, read), prefetch),
        front_seek,
        back_seek,
        hooks: ReadHooks::new(inner, &sv),
        _pinned: pinned,
    })
}

/// Iterator over `(key, value)` pairs in key order; see [`crate::Db::iter`]. It reads one
/// point in time (the moment it was made, or its snapshot). After an error it ends. Read
/// sequentially over separated values, it prefetches them in parallel (see
/// [`crate::iter::prefetch`]).
pub struct DbIterator {
    entries: PrefetchEntries<MergingIterator>,
    /// Where the first step forward seeks (its bound), told to the layout on that step.
    front_seek: Option<Vec<u8>>,
    /// Where the first step backward seeks, told to the layout on that step.
    back_seek: Option<Vec<u8>>,
    hooks: ReadHooks,
    _pinned: Arc<Pinned>,
}

impl DbIterator {
    /// Count `item` as read.
    fn read(
        &mut self,
        item: Option<Result<(Vec<u8>, Vec<u8>)>>,
    ) -> Option<Result<(Vec<u8>, Vec<u8>)>> {
        if let Some(Ok((k, v))) = &item {
            self.hooks.read(k, v.len());
        }
        item
    }
}

impl Iterator for DbIterator {
    type Item = Result<(Vec<u8>, Vec<u8>)>;
    fn next(&mut self) -> Option<Self::Item> {
        if let Some(k) = self.front_seek.take() {
            self.hooks.seek(&k);
        }
        let item = self.entries.next();
        self.read(item)
    }
}

impl DoubleEndedIterator for DbIterator {
    fn next_back(&mut self) -> Option<Self::Item> {
        if let Some(k) = self.back_seek.take() {
            self.hooks.seek(&k);
        }
        let item = self.entries.next_back();
        self.read(item)
    }
}

/// A positioned cursor over one point in time; see [`crate::Db::cursor`]. Starts
/// unpositioned: call a seek first. After an error it is not valid until the next seek.
/// Moved sequentially over separated values, it prefetches them in parallel (see
/// [`crate::iter::prefetch`]).
pub struct Cursor {
    it: PrefetchCursor<MergingIterator>,
    hooks: ReadHooks,
    /// Where `seek_to_first` seeks (its lower bound), if anywhere.
    lower: Option<Vec<u8>>,
    /// Where `seek_to_last` seeks (its upper bound), if anywhere.
    upper: Option<Vec<u8>>,
    _pinned: Arc<Pinned>,
}

impl Cursor {
    /// True when positioned on an entry.
    pub fn valid(&self) -> bool {
        self.it.valid()
    }
    /// Position on the first key (within the bounds).
    pub fn seek_to_first(&mut self) -> Result<()> {
        if let Some(k) = &self.lower {
            self.hooks.seek(k);
        }
        let r = self.it.seek_to_first();
        self.read(r)
    }
    /// Position on the last key (within the bounds).
    pub fn seek_to_last(&mut self) -> Result<()> {
        if let Some(k) = &self.upper {
            self.hooks.seek(k);
        }
        let r = self.it.seek_to_last();
        self.read(r)
    }
    /// Position on the first key `>= key`.
    pub fn seek(&mut self, key: &[u8]) -> Result<()> {
        self.hooks.seek(key);
        let r = self.it.seek(key);
        self.read(r)
    }
    /// Position on the last key `<= key`.
    pub fn seek_for_prev(&mut self, key: &[u8]) -> Result<()> {
        self.hooks.seek(key);
        let r = self.it.seek_for_prev(key);
        self.read(r)
    }
    /// Move forward. Requires `valid()`.
    #[expect(
        clippy::should_implement_trait,
        reason = "a cursor moves in place and reports errors; DbIterator is the Iterator"
    )]
    pub fn next(&mut self) -> Result<()> {
        let r = self.it.next();
        self.read(r)
    }
    /// Move back. Requires `valid()`.
    pub fn prev(&mut self) -> Result<()> {
        let r = self.it.prev();
        self.read(r)
    }
    /// Count the entry a move (with result `r`) landed on as read.
    fn read(&mut self, r: Result<()>) -> Result<()> {
        if r.is_ok() && self.it.valid() {
            self.hooks.read(self.it.key(), self.it.value().len());
        }
        r
    }
    /// The current key. Requires `valid()`.
    pub fn key(&self) -> &[u8] {
        self.it.key()
    }
    /// The current value. Requires `valid()`.
    pub fn value(&self) -> &[u8] {
        self.it.value()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, reason = "a test's failure is a test failure")]

    use std::sync::Arc;

    use super::{prepare, resolver};
    use crate::{Db, IterOptions, Options};

    /// A prefetch job holds the iterator's resolver, and may run on after the iterator is
    /// dropped: the resolver must keep the iterator's version alive (the value log punches
    /// or deletes what a retired version may point into only once it is gone).
    #[test]
    fn an_iterators_resolver_keeps_its_version_after_the_iterator_is_dropped() {
        let mut o = Options::preset("wisckey").expect("preset");
        o.env = crate::env::Env::memory();
        let db = Db::open("/db", o).expect("open");
        db.put(b"k", &[7u8; 1000]).expect("put");
        db.flush().expect("flush");
        let inner = db.inner().into_owned();
        let (_, sv, _, pinned, read) = prepare(&inner, IterOptions::default());
        let job_store = resolver(&inner, &pinned, read);
        let version = Arc::downgrade(&sv.version);
        // A newer version replaces the iterator's; then the iterator goes.
        db.put(b"k2", &[8u8; 1000]).expect("put");
        db.flush().expect("flush");
        drop((sv, pinned));
        assert!(
            version.upgrade().is_some(),
            "the job's resolver pins the version"
        );
        drop(job_store);
        assert!(version.upgrade().is_none(), "and only it did");
        db.close().expect("close");
    }
}
