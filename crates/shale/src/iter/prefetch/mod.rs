//! Scans that resolve values ahead of the reader (WiscKey §3.3.1, "parallel prefetching").
//!
//! With separated values a scan is a walk over the tree, which is sequential, plus one
//! random read per value. Done one at a time those reads are a chain of single random
//! reads; issued together they keep the device busy. [`PrefetchCursor`] watches how it is
//! moved. Once it has stepped [`Prefetch::after`] times (default [`SEQUENTIAL_TRIGGER`],
//! `Options::scan_prefetch_after`) in one direction since the last
//! seek and one of those entries held a value pointer, it reads the next `depth` visible
//! entries from its [`DbIter`] (so after snapshot filtering, deduplication and bounds: only
//! entries the reader will see), hands their pointers to a [`PrefetchPool`], and serves the
//! following steps from that window in order, refilling it as it goes. The pool is used
//! only while the scan's reads are slow (a moving average of their duration at least
//! [`Prefetch::slow_read`]): a value in the page cache is cheaper to read in place than to
//! hand to another thread.
//!
//! What the reader sees does not change: the same entries in the same order, and an error
//! (from the tree or from a value) is returned by the step that reaches the entry it
//! belongs to, never earlier. A seek or a change of direction drops the window: queued
//! resolves are cancelled, finished ones discarded. Inline values never reach the pool,
//! and a scan that never meets a pointer never leaves the plain path, so the `inline`
//! placement pays one counter per step.
//!
//! [`PrefetchEntries`] is the double-ended Rust iterator built from two such cursors, one
//! per end; it is what [`crate::Db::iter`] returns inside.

mod entries;
mod pool;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use entries::{PrefetchEntries, ResolvedItem};
pub use pool::{PoolStats, PrefetchPool, Ticket};

use super::InternalIterator;
use super::db_iter::{DbIter, DbIterOptions};
use super::{ResolveMemo, ValueBytes};
use crate::error::{Error, Result};
use crate::key::ValueKind;

/// What a scan needs of a value placement: turning a stored value into the user's. A
/// placement is one (`db/read.rs` wraps it); tests plug in an in-memory store.
pub trait Resolve: Send + Sync {
    /// The user's value for the entry `key` whose tree entry holds `stored` of `kind`
    /// (never [`ValueKind::Value`]: inline values are not resolved). A value the store holds
    /// in memory may come back shared rather than copied.
    fn resolve(&self, key: &[u8], kind: ValueKind, stored: &[u8]) -> Result<ValueBytes<'static>>;

    /// How to find a value an entry carries beside its pointer
    /// ([`crate::values::ValueStore::carried_at`]): the cursor then hands it out from the
    /// entry without resolving. Default: entries never carry one.
    fn carried_at(&self) -> Option<crate::iter::CarriedAt> {
        None
    }

    /// [`Resolve::resolve`] by the cursor itself, with its own `memo` (kept between its
    /// entries: [`crate::values::ValueStore::resolve_in`]). Default: `resolve`.
    fn resolve_in(
        &self,
        memo: &mut ResolveMemo,
        key: &[u8],
        kind: ValueKind,
        stored: &[u8],
    ) -> Result<ValueBytes<'static>> {
        let _ = memo;
        self.resolve(key, kind, stored)
    }
}

/// Steps in one direction after a seek before a cursor looks ahead, by default
/// (`Options::scan_prefetch_after`). Two, so a seek followed by one `next` (a point-like
/// read) never starts the pool.
pub const SEQUENTIAL_TRIGGER: usize = 2;

/// A cursor times one resolve in this many (and its first): two clock reads per value cost
/// about what reading a value kept in memory costs (5 % of a YCSB-E run over cached 1 KiB
/// values), and the average needs no more.
const TIME_ONE_IN: u32 = 8;

/// A timed resolve counts as at most this many times [`Prefetch::slow_read`]: one read
/// that a loaded machine preempted for a millisecond must not turn the pool on for a scan
/// whose reads are cached; a run of slow ones still does.
const SLOW_READ_CAP: u32 = 4;

/// How a cursor prefetches: the pool and how many entries it reads ahead.
#[derive(Clone, Debug)]
pub struct Prefetch {
    /// The pool that resolves pointers.
    pub pool: Arc<PrefetchPool>,
    /// Entries read ahead of the reader once the scan is sequential (at least 1).
    pub depth: usize,
    /// Steps in one direction since the last seek (or turn) after which the scan counts as
    /// sequential and looks ahead (at least 1; [`SEQUENTIAL_TRIGGER`] by default).
    pub after: usize,
    /// Use the pool only while this scan's value reads take at least this long on average:
    /// reads served from the page cache are faster done in place than handed to a thread.
    /// Zero always uses it.
    pub slow_read: Duration,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dir {
    Forward,
    Backward,
}

/// Where the reader is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pos {
    Invalid,
    /// On the inner cursor's entry; a pointer's resolved value is in `value`.
    OnInner,
    /// Ahead mode: the inner cursor has moved past the reader, whose entry is in `key` and
    /// `value`; the entries between are in `window`.
    Owned,
}

/// Where a cursor stops early, whatever its bounds say (the other end of a double-ended
/// iterator has already yielded the keys past it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Limit {
    None,
    /// Only keys below this one.
    Below(Vec<u8>),
    /// Only keys above this one.
    Above(Vec<u8>),
}

impl Limit {
    fn excludes(&self, key: &[u8]) -> bool {
        match self {
            Limit::None => false,
            Limit::Below(k) => key >= k.as_slice(),
            Limit::Above(k) => key <= k.as_slice(),
        }
    }
}

/// A read-ahead entry's value.
enum Pending {
    /// Inline bytes, or a value already resolved.
    Ready(ValueBytes<'static>),
    /// A pointer the pool did not take (yet).
    Stored(ValueKind, Vec<u8>),
    Submitted(Ticket),
}

struct Ahead {
    key: Vec<u8>,
    value: Pending,
}

/// A positioned cursor over the user's view that resolves values, prefetching them on
/// sequential scans. See the module docs.
///
/// Movement methods return errors; after an error the cursor is not valid until the next
/// seek. `next` and `prev` do nothing when it is not valid.
pub struct PrefetchCursor<I: InternalIterator> {
    inner: DbIter<I>,
    values: Arc<dyn Resolve>,
    prefetch: Option<Prefetch>,
    pos: Pos,
    /// Owned: the reader's key.
    key: Vec<u8>,
    /// OnInner with a pointer, or Owned: the reader's value.
    value: ValueBytes<'static>,
    dir: Dir,
    /// Steps in `dir` since the last seek or change of direction.
    run: usize,
    /// A pointer was met during this run.
    saw_pointer: bool,
    /// Owned: entries after the reader's, in `dir` order. The inner cursor is on the last
    /// one (or on the reader's entry when empty), unless `drained`. A tree error is kept in
    /// place as the last item.
    window: VecDeque<Result<Ahead>>,
    /// Owned: the inner cursor has nothing more to give (it ended or failed).
    drained: bool,
    /// Window entries before this index have been offered to the pool.
    offered: usize,
    limit: Limit,
    /// Moving average of the time one resolve took (whoever ran it, one in
    /// [`TIME_ONE_IN`] timed); `None` before the first.
    read_time: Option<Duration>,
    /// Resolves run on this thread so far (which of them to time).
    resolves: u32,
    /// What the placement keeps between this cursor's resolves on its own thread.
    memo: ResolveMemo,
    /// On an inner entry that carries its value beside its pointer: where the value
    /// starts in the entry's stored bytes ([`Resolve::carried_at`]).
    carried: Option<usize>,
    /// The placement's [`Resolve::carried_at`], asked once.
    carried_at: Option<crate::iter::CarriedAt>,
}

impl<I: InternalIterator> PrefetchCursor<I> {
    /// View `inner` (all versions, in internal-key order) as `opts` says, resolving values
    /// with `values`; `prefetch` of `None` never looks ahead. Not positioned until a seek.
    pub fn new(
        inner: I,
        opts: DbIterOptions,
        values: Arc<dyn Resolve>,
        prefetch: Option<Prefetch>,
    ) -> Self {
        let carried_at = values.carried_at();
        PrefetchCursor {
            inner: DbIter::new(inner, opts),
            values,
            prefetch: prefetch.filter(|p| p.depth > 0),
            pos: Pos::Invalid,
            key: Vec::new(),
            value: ValueBytes::default(),
            dir: Dir::Forward,
            run: 0,
            saw_pointer: false,
            window: VecDeque::new(),
            drained: false,
            offered: 0,
            limit: Limit::None,
            read_time: None,
            resolves: 0,
            memo: ResolveMemo::default(),
            carried: None,
            carried_at,
        }
    }

    /// Whether to time the next resolve run on this thread.
    fn time_this_one(&mut self) -> bool {
        let timed = self.time_next();
        self.resolves = self.resolves.wrapping_add(1);
        timed
    }

    /// Whether the next resolve run on this thread is one to time.
    fn time_next(&self) -> bool {
        self.resolves.is_multiple_of(TIME_ONE_IN)
    }

    /// Hand out `v` from now on; the value it replaces goes back to the memo (a buffer the
    /// placement may read the next value into: [`ResolveMemo::give_back`]).
    #[inline]
    fn set_value(&mut self, v: ValueBytes<'static>) {
        let old = std::mem::replace(&mut self.value, v);
        self.memo.give_back(old);
    }

    /// Resolve on this thread, timing it.
    fn resolve_here(
        &mut self,
        key: &[u8],
        kind: ValueKind,
        stored: &[u8],
    ) -> Result<ValueBytes<'static>> {
        let start = self.time_this_one().then(Instant::now);
        let r = self.values.resolve_in(&mut self.memo, key, kind, stored);
        if let Some(s) = start {
            self.note_read_time(s.elapsed());
        }
        r
    }

    /// Fold one resolve's duration into the average (weight 1/8: a few slow reads in a row
    /// start the pool, a few fast ones stop feeding it).
    fn note_read_time(&mut self, took: Duration) {
        let took = match &self.prefetch {
            Some(p) => took.min(p.slow_read.saturating_mul(SLOW_READ_CAP)),
            None => took,
        };
        self.read_time = Some(match self.read_time {
            None => took,
            Some(avg) => avg - avg / 8 + took / 8,
        });
    }

    /// True when handing reads to the pool pays: prefetching is on and reads are slow.
    fn reads_are_slow(&self) -> bool {
        match (&self.prefetch, self.read_time) {
            (Some(p), Some(t)) => t >= p.slow_read,
            _ => false,
        }
    }

    /// True when positioned on an entry.
    pub fn valid(&self) -> bool {
        self.pos != Pos::Invalid
    }

    /// The current key. Requires `valid()`; empty otherwise.
    pub fn key(&self) -> &[u8] {
        match self.pos {
            Pos::Invalid => &[],
            Pos::OnInner => self.inner.key(),
            Pos::Owned => &self.key,
        }
    }

    /// The current value, resolved. Requires `valid()`; empty otherwise.
    pub fn value(&self) -> &[u8] {
        match self.pos {
            Pos::Invalid => &[],
            Pos::OnInner if self.inner.kind() == ValueKind::Value => self.inner.value(),
            Pos::OnInner => match self.carried {
                Some(at) => self.inner.value().get(at..).unwrap_or_default(),
                None => &self.value,
            },
            Pos::Owned => &self.value,
        }
    }

    /// True while entries are served from a look-ahead window.
    pub fn is_prefetching(&self) -> bool {
        self.pos == Pos::Owned
    }

    /// Position on the first key (within the bounds).
    pub fn seek_to_first(&mut self) -> Result<()> {
        self.reset(Dir::Forward);
        let r = self.inner.seek_to_first();
        self.settle(r)
    }

    /// Position on the last key (within the bounds).
    pub fn seek_to_last(&mut self) -> Result<()> {
        self.reset(Dir::Backward);
        let r = self.inner.seek_to_last();
        self.settle(r)
    }

    /// Position on the first key `>= key`.
    pub fn seek(&mut self, key: &[u8]) -> Result<()> {
        self.reset(Dir::Forward);
        let r = self.inner.seek(key);
        self.settle(r)
    }

    /// Position on the last key `<= key`.
    pub fn seek_for_prev(&mut self, key: &[u8]) -> Result<()> {
        self.reset(Dir::Backward);
        let r = self.inner.seek_for_prev(key);
        self.settle(r)
    }

    /// Move forward. Does nothing when not valid.
    #[allow(
        clippy::should_implement_trait,
        reason = "a cursor step that can fail; PrefetchEntries is the Iterator"
    )]
    pub fn next(&mut self) -> Result<()> {
        self.step(Dir::Forward)
    }

    /// Move back. Does nothing when not valid.
    pub fn prev(&mut self) -> Result<()> {
        self.step(Dir::Backward)
    }

    /// Treat keys `limit` excludes as the end of the view, from the next movement on.
    /// Window entries it excludes are dropped (their resolves cancelled), so neither their
    /// values nor their errors ever reach the reader.
    pub(crate) fn set_limit(&mut self, limit: Limit) {
        self.limit = limit;
        let cut = self
            .window
            .iter()
            .position(|item| item.as_ref().is_ok_and(|a| self.limit.excludes(&a.key)));
        if let Some(i) = cut {
            self.window.truncate(i);
            self.drained = true;
            self.offered = self.offered.min(i);
        }
    }

    /// Forget the window and the run: the reader is about to be repositioned.
    fn reset(&mut self, dir: Dir) {
        self.drop_window();
        self.pos = Pos::Invalid;
        self.dir = dir;
        self.run = 0;
        self.saw_pointer = false;
    }

    /// Dropping the tickets cancels their jobs (or discards their results).
    fn drop_window(&mut self) {
        self.window.clear();
        self.drained = false;
        self.offered = 0;
    }

    fn fail(&mut self, e: Error) -> Result<()> {
        self.drop_window();
        self.pos = Pos::Invalid;
        Err(e)
    }

    /// After a movement of the inner cursor: be on its entry, with the value resolved.
    fn settle(&mut self, r: Result<()>) -> Result<()> {
        if let Err(e) = r {
            return self.fail(e);
        }
        if !self.inner.valid() {
            self.pos = Pos::Invalid;
            return Ok(());
        }
        let kind = self.inner.kind();
        let pointer = kind != ValueKind::Value;
        // Decided before the key is borrowed; counted only for entries resolved below.
        let timed = pointer && self.time_next();
        // The key once (from a memtable or a table block it is decoded on every call), with
        // a pointer's stored bytes from the same walk down the inner iterators.
        let (key, stored) = if pointer {
            self.inner.entry()
        } else {
            (self.inner.key(), &[][..])
        };
        if self.limit.excludes(key) {
            self.pos = Pos::Invalid;
            return Ok(());
        }
        // A value in memory beside its pointer is handed out from the entry: nothing to
        // read, time or prefetch.
        self.carried = match self.carried_at {
            Some(at) if pointer => at(key, kind, stored),
            _ => None,
        };
        if pointer && self.carried.is_none() {
            let start = timed.then(Instant::now);
            let r = self.values.resolve_in(&mut self.memo, key, kind, stored);
            self.saw_pointer = true;
            self.resolves = self.resolves.wrapping_add(1);
            if let Some(s) = start {
                self.note_read_time(s.elapsed());
            }
            match r {
                Ok(v) => self.set_value(v),
                Err(e) => return self.fail(e),
            }
        }
        self.pos = Pos::OnInner;
        Ok(())
    }

    fn step(&mut self, dir: Dir) -> Result<()> {
        match self.pos {
            Pos::Invalid => return Ok(()),
            Pos::Owned if dir == self.dir => return self.advance_window(),
            Pos::Owned => {
                // Put the inner cursor back on the reader's entry; it is visible at this
                // snapshot, so a seek to its key lands on it.
                self.drop_window();
                let key = std::mem::take(&mut self.key);
                let r = self.inner.seek(&key);
                if let Err(e) = r {
                    return self.fail(e);
                }
                if !self.inner.valid() || self.inner.key() != key.as_slice() {
                    return self.fail(Error::corruption(
                        "(scan)",
                        0,
                        "repositioning a prefetching scan did not find its current key",
                    ));
                }
                self.key = key;
                self.pos = Pos::OnInner;
            }
            Pos::OnInner => {}
        }
        if dir != self.dir {
            self.dir = dir;
            self.run = 0;
            self.saw_pointer = false;
        }
        let r = match dir {
            Dir::Forward => self.inner.next(),
            Dir::Backward => self.inner.prev(),
        };
        self.settle(r)?;
        self.run += 1;
        if self.pos == Pos::OnInner
            && self
                .prefetch
                .as_ref()
                .is_some_and(|p| self.run >= p.after.max(1))
            && self.saw_pointer
            && self.reads_are_slow()
        {
            self.start_window();
        }
        Ok(())
    }

    /// Enter ahead mode: take the reader's entry out of the inner cursor and fill the window.
    fn start_window(&mut self) {
        if self.prefetch.is_none() {
            return;
        }
        self.key.clear();
        self.key.extend_from_slice(self.inner.key());
        // The value the reader is on, copied out of the inner cursor (the one it replaces
        // goes back to the memo: a buffer the next read may reuse).
        if self.inner.kind() == ValueKind::Value {
            let v = ValueBytes::Owned(self.inner.value().to_vec());
            self.set_value(v);
        } else if let Some(at) = self.carried.take() {
            let v = ValueBytes::Owned(self.inner.value().get(at..).unwrap_or_default().to_vec());
            self.set_value(v);
        }
        self.pos = Pos::Owned;
        self.drop_window();
        self.fill();
    }

    /// Read entries from the inner cursor until the window is full, then offer its pointers
    /// to the pool.
    fn fill(&mut self) {
        let Some(p) = &self.prefetch else {
            return;
        };
        while self.window.len() < p.depth && !self.drained {
            let r = match self.dir {
                Dir::Forward => self.inner.next(),
                Dir::Backward => self.inner.prev(),
            };
            match r {
                Err(e) => {
                    self.window.push_back(Err(e));
                    self.drained = true;
                }
                Ok(()) if !self.inner.valid() || self.limit.excludes(self.inner.key()) => {
                    self.drained = true;
                }
                Ok(()) => {
                    let kind = self.inner.kind();
                    let stored = self.inner.value();
                    let value = if kind == ValueKind::Value {
                        Pending::Ready(ValueBytes::Owned(stored.to_vec()))
                    } else if let Some(at) = self
                        .carried_at
                        .and_then(|f| f(self.inner.key(), kind, stored))
                    {
                        let carried = stored.get(at..).unwrap_or_default();
                        Pending::Ready(ValueBytes::Owned(carried.to_vec()))
                    } else {
                        Pending::Stored(kind, stored.to_vec())
                    };
                    self.window.push_back(Ok(Ahead {
                        key: self.inner.key().to_vec(),
                        value,
                    }));
                }
            }
        }
        if !self.reads_are_slow() {
            // Fast reads: the reader resolves each entry itself when it gets there (and
            // so keeps measuring); offering resumes if reads turn slow again.
            return;
        }
        while let Some(item) = self.window.get_mut(self.offered) {
            if let Ok(Ahead { key, value }) = item
                && let Pending::Stored(kind, bytes) = value
            {
                match p
                    .pool
                    .submit(&self.values, key, *kind, std::mem::take(bytes))
                {
                    Ok(t) => *value = Pending::Submitted(t),
                    Err(back) => {
                        // The pool is full or closed: keep the pointer and offer it again
                        // at the next step (or resolve it here when the reader gets to it).
                        *bytes = back;
                        break;
                    }
                }
            }
            self.offered += 1;
        }
    }

    /// Ahead mode, same direction: the next window entry becomes the reader's.
    fn advance_window(&mut self) -> Result<()> {
        if self.window.is_empty() {
            self.fill();
        }
        let Some(item) = self.window.pop_front() else {
            // The inner cursor ended and the window is spent: the scan is over.
            self.drop_window();
            self.pos = Pos::Invalid;
            return Ok(());
        };
        self.offered = self.offered.saturating_sub(1);
        let ahead = match item {
            Ok(a) if self.limit.excludes(&a.key) => {
                self.drop_window();
                self.pos = Pos::Invalid;
                return Ok(());
            }
            Ok(a) => a,
            Err(e) => return self.fail(e),
        };
        // Refill before waiting, so the pool has work while this value is awaited.
        self.fill();
        let value = match ahead.value {
            Pending::Ready(v) => Ok(v),
            Pending::Stored(kind, bytes) => self.resolve_here(&ahead.key, kind, &bytes),
            Pending::Submitted(t) => {
                let (r, took) = t.wait();
                self.note_read_time(took);
                r
            }
        };
        match value {
            Ok(v) => {
                self.key = ahead.key;
                self.set_value(v);
                Ok(())
            }
            Err(e) => self.fail(e),
        }
    }
}
