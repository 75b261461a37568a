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

use super::{DbInner, IterOptions, Snapshot, SuperVersion};
use crate::env::ReadCause;
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::iter::db_iter::DbIterOptions;
use crate::iter::merging::MergingIterator;
use crate::iter::prefetch::{Prefetch, PrefetchCursor, PrefetchEntries, Resolve};
use crate::key::{SeqNo, ValueKind, parse_internal_key, seek_key};
use crate::layout::ReadContext;
use crate::memory::MemLookup;
use crate::values::ValueStore;

pub(crate) fn get(inner: &DbInner, key: &[u8], snapshot: Option<SeqNo>) -> Result<Option<Vec<u8>>> {
    let sv = inner.super_version();
    let seq = snapshot.unwrap_or_else(|| inner.last_seq.load(Ordering::Acquire));
    let resolve = |kind: ValueKind, v: Vec<u8>| -> Result<Option<Vec<u8>>> {
        if kind == ValueKind::Value {
            return Ok(Some(v));
        }
        Ok(Some(inner.values.resolve(key, kind, &v)?.into_owned()))
    };
    for mem in std::iter::once(&sv.mem).chain(sv.imms.iter()) {
        match mem.get(key, seq) {
            Some(MemLookup::Found(kind, v)) => return resolve(kind, v),
            Some(MemLookup::Deleted) => return Ok(None),
            None => {}
        }
    }
    let ctx = ReadContext {
        tables: &inner.tables,
        cause: ReadCause::Get,
    };
    let seek = seek_key(key, seq);
    let found = inner.layout.get(&sv.version, &ctx, key, &seek)?;
    if inner.layout.take_compaction_wanted() {
        wake_compaction(inner);
    }
    match found {
        None => Ok(None),
        Some((ikey, value)) => {
            let parsed = parse_internal_key(&ikey)
                .map_err(|d| Error::corruption(&inner.dir, 0, format!("lookup of a key: {d}")))?;
            match parsed.kind {
                ValueKind::Delete => Ok(None),
                kind => resolve(kind, value),
            }
        }
    }
}

/// Everything an open iterator keeps alive: the memtables and version it reads, and the
/// snapshot it reads at.
struct Pinned {
    _sv: Arc<SuperVersion>,
    _snapshot: Option<Snapshot>,
}

fn merged(inner: &DbInner, sv: &Arc<SuperVersion>) -> Result<MergingIterator> {
    let mut children: Vec<Box<dyn InternalIterator>> = Vec::with_capacity(2 + sv.imms.len());
    children.push(Arc::clone(&sv.mem).iter());
    for m in &sv.imms {
        children.push(Arc::clone(m).iter());
    }
    let ctx = ReadContext {
        tables: &inner.tables,
        cause: ReadCause::Scan,
    };
    children.extend(inner.layout.iterators(&sv.version, &ctx)?);
    Ok(MergingIterator::new(children))
}

fn prepare(
    inner: &DbInner,
    options: IterOptions,
) -> (SeqNo, Arc<SuperVersion>, DbIterOptions, Pinned) {
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
    let pinned = Pinned {
        _sv: Arc::clone(&sv),
        _snapshot: options.snapshot,
    };
    (seq, sv, opts, pinned)
}

/// The store's value placement as a [`Resolve`].
#[derive(Debug)]
struct PlacementResolver(Arc<dyn ValueStore>);

impl Resolve for PlacementResolver {
    fn resolve(&self, key: &[u8], kind: ValueKind, stored: &[u8]) -> Result<Vec<u8>> {
        // The placement checks that the record it reads belongs to `key`.
        Ok(self.0.resolve(key, kind, stored)?.into_owned())
    }
}

fn resolver(inner: &DbInner) -> Arc<dyn Resolve> {
    Arc::new(PlacementResolver(Arc::clone(&inner.values)))
}

pub(crate) fn cursor(
    inner: &Arc<DbInner>,
    options: IterOptions,
    prefetch: Option<Prefetch>,
) -> Result<Cursor> {
    let (_, sv, opts, pinned) = prepare(inner, options);
    let it = merged(inner, &sv)?;
    Ok(Cursor {
        it: PrefetchCursor::new(it, opts, resolver(inner), prefetch),
        on_seek: seek_hook(inner, &sv),
        _pinned: pinned,
    })
}

/// Tell the layout where each seek lands (FLSM compacts guards that seeks keep hitting), and
/// wake the compaction thread when it asks for it.
fn seek_hook(inner: &Arc<DbInner>, sv: &Arc<SuperVersion>) -> SeekHook {
    let weak = Arc::downgrade(inner);
    let version = Arc::clone(&sv.version);
    Box::new(move |key: &[u8]| {
        if let Some(inner) = weak.upgrade()
            && inner.layout.note_seek(&version, key)
        {
            wake_compaction(&inner);
        }
    })
}

/// Ask the compaction thread to run the picker (a read made the layout want a compaction).
fn wake_compaction(inner: &DbInner) {
    let mut bg = inner.bg.lock();
    bg.compaction_wanted = true;
    inner.bg_cv.notify_all();
}

type SeekHook = Box<dyn Fn(&[u8]) + Send + Sync>;

pub(crate) fn iter(
    inner: &DbInner,
    options: IterOptions,
    prefetch: Option<Prefetch>,
) -> Result<DbIterator> {
    let (_, sv, opts, pinned) = prepare(inner, options);
    let front = merged(inner, &sv)?;
    let back = merged(inner, &sv)?;
    Ok(DbIterator {
        entries: PrefetchEntries::new(front, back, opts, resolver(inner), prefetch),
        _pinned: pinned,
    })
}

/// Iterator over `(key, value)` pairs in key order; see [`crate::Db::iter`]. It reads one
/// point in time (the moment it was made, or its snapshot). After an error it ends. Read
/// sequentially over separated values, it prefetches them in parallel (see
/// [`crate::iter::prefetch`]).
pub struct DbIterator {
    entries: PrefetchEntries<MergingIterator>,
    _pinned: Pinned,
}

impl Iterator for DbIterator {
    type Item = Result<(Vec<u8>, Vec<u8>)>;
    fn next(&mut self) -> Option<Self::Item> {
        self.entries.next()
    }
}

impl DoubleEndedIterator for DbIterator {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.entries.next_back()
    }
}

/// A positioned cursor over one point in time; see [`crate::Db::cursor`]. Starts
/// unpositioned: call a seek first. After an error it is not valid until the next seek.
/// Moved sequentially over separated values, it prefetches them in parallel (see
/// [`crate::iter::prefetch`]).
pub struct Cursor {
    it: PrefetchCursor<MergingIterator>,
    on_seek: SeekHook,
    _pinned: Pinned,
}

impl Cursor {
    /// True when positioned on an entry.
    pub fn valid(&self) -> bool {
        self.it.valid()
    }
    /// Position on the first key (within the bounds).
    pub fn seek_to_first(&mut self) -> Result<()> {
        self.it.seek_to_first()
    }
    /// Position on the last key (within the bounds).
    pub fn seek_to_last(&mut self) -> Result<()> {
        self.it.seek_to_last()
    }
    /// Position on the first key `>= key`.
    pub fn seek(&mut self, key: &[u8]) -> Result<()> {
        (self.on_seek)(key);
        self.it.seek(key)
    }
    /// Position on the last key `<= key`.
    pub fn seek_for_prev(&mut self, key: &[u8]) -> Result<()> {
        self.it.seek_for_prev(key)
    }
    /// Move forward. Requires `valid()`.
    #[expect(
        clippy::should_implement_trait,
        reason = "a cursor moves in place and reports errors; DbIterator is the Iterator"
    )]
    pub fn next(&mut self) -> Result<()> {
        self.it.next()
    }
    /// Move back. Requires `valid()`.
    pub fn prev(&mut self) -> Result<()> {
        self.it.prev()
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
