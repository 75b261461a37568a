//! The cursor slot every iterator steps under ([`CursorSlot`], registered with its store so
//! that `close()` releases it) and `Iterator`: plyvel's range iterator, a position between two entries of a range, moved by
//! `next()`, `prev()`, `seek()`, `seek_to_start()` and `seek_to_stop()`.
//!
//! The range is given to the engine as bounds (`IterOptions`), so the cursor never leaves
//! it; the position is the cursor plus a [`State`], stepped as plyvel's `real_next` and
//! `real_prev` do.
//!
//! # Read-ahead
//!
//! Releasing the GIL and locking the slot cost about as much as the engine's step, so an
//! iterator that keeps stepping in one direction reads the next entries in batches (8, then
//! doubling to 256 entries or 256 KiB) without the GIL, and hands them out with the GIL held
//! and no wait. The position is then *before the first entry read ahead* (in the direction of
//! travel), while the cursor is on the last one. Any other move first puts the cursor back
//! ([`restore`]): it seeks to that first entry, which the cursor sees again because it reads
//! at a fixed sequence number. When the batch is used up, cursor and state are exactly as
//! plyvel's steps would have left them, so the state machine needs no case for read-ahead.

use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};
use pyo3::exceptions::{PyStopIteration, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use shale::{Cursor, IterOptions, ReadOptions};

use crate::concat;
use crate::errors::{Failure, iterator_closed, to_py};
use crate::store::{Release, Store};

/// An iterator's engine cursor, with a range iterator's position and read-ahead.
pub(crate) struct CursorSlot {
    inner: Mutex<Slot>,
}

pub(crate) struct Slot {
    /// `None` once the iterator or its store is closed.
    pub(crate) cursor: Option<Cursor>,
    pub(crate) state: State,
    pub(crate) ahead: ReadAhead,
}

impl CursorSlot {
    fn new(cursor: Cursor, state: State) -> Arc<CursorSlot> {
        Arc::new(CursorSlot {
            inner: Mutex::new(Slot {
                cursor: Some(cursor),
                state,
                ahead: ReadAhead::default(),
            }),
        })
    }

    /// Drop the cursor (and the tables and memtables it pins).
    pub(crate) fn release(&self) {
        let mut slot = self.inner.lock();
        let cursor = slot.cursor.take();
        slot.ahead = ReadAhead::default();
        drop(slot);
        drop(cursor);
    }

    /// The slot, if no other thread holds it. For use with the GIL held, to hand out what
    /// was read ahead: the guard must be dropped before the GIL is next released.
    pub(crate) fn try_lock(&self) -> Option<MutexGuard<'_, Slot>> {
        self.inner.try_lock()
    }

    /// Run `f` on the slot without the GIL; `RuntimeError` once closed.
    pub(crate) fn with_slot<R: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut Cursor, &mut State, &mut ReadAhead) -> shale::Result<R> + Send,
    ) -> PyResult<R> {
        let r = py.detach(|| {
            let mut slot = self.inner.lock();
            let Slot {
                cursor,
                state,
                ahead,
            } = &mut *slot;
            match cursor.as_mut() {
                Some(c) => f(c, state, ahead).map_err(Failure::Engine),
                None => Err(Failure::Closed),
            }
        });
        r.map_err(|e| match e {
            Failure::Engine(e) => to_py(py, e),
            Failure::Closed => iterator_closed(),
        })
    }

    /// Run `f` on the cursor without the GIL; `RuntimeError` once closed.
    pub(crate) fn with<R: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut Cursor) -> shale::Result<R> + Send,
    ) -> PyResult<R> {
        self.with_slot(py, |c, _, _| f(c))
    }
}

/// Open a cursor on `store` and register it so that closing the store drops it. Registered
/// under the store's read lock: a concurrent `close()` either drops it or came first.
pub(crate) fn open_cursor(
    py: Python<'_>,
    store: &Arc<Store>,
    options: IterOptions,
    state: State,
) -> PyResult<Arc<CursorSlot>> {
    store.run(py, |db| {
        let slot = CursorSlot::new(db.cursor(options)?, state);
        store.register(&slot);
        Ok(slot)
    })
}

impl Release for CursorSlot {
    fn release(&self) {
        CursorSlot::release(self);
    }
}

/// Where a range iterator stands, as plyvel defines it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    /// Before the first entry of the range.
    BeforeStart,
    /// After the last entry of the range.
    AfterStop,
    /// Just after the cursor's entry (the last forward step returned it).
    After,
    /// Just before the cursor's entry (a `seek` landed on it).
    Before,
}

/// Entries of a range iterator read past its position, in the direction it was moving.
#[derive(Default)]
pub(crate) struct ReadAhead {
    /// The entries were read in key order (else backwards).
    forward: bool,
    /// Full keys (with a `PrefixedDB`'s prefix) and values, back to back.
    data: Vec<u8>,
    /// Per entry: where its key starts, where its value starts (its key's end), where its
    /// value ends.
    spans: Vec<[usize; 3]>,
    /// The next entry to hand out.
    next: usize,
    /// How many entries the next batch reads; 0 when the last step did not continue a run
    /// of steps in one direction.
    batch: usize,
    /// The direction of the last step.
    last_forward: Option<bool>,
}

const FIRST_BATCH: usize = 8;
const MAX_BATCH: usize = 256;
const MAX_BATCH_BYTES: usize = 256 << 10;

impl ReadAhead {
    fn is_empty(&self) -> bool {
        self.next >= self.spans.len()
    }

    /// Entries are waiting to be handed out in direction `forward`.
    fn pending(&self, forward: bool) -> bool {
        !self.is_empty() && self.forward == forward
    }

    fn clear(&mut self) {
        self.data.clear();
        self.spans.clear();
        self.next = 0;
    }

    /// Forget the entries and the run of steps (the position was set anew).
    fn reset(&mut self) {
        self.clear();
        self.batch = 0;
        self.last_forward = None;
    }

    fn push(&mut self, key: &[u8], value: Option<&[u8]>) {
        let k = self.data.len();
        self.data.extend_from_slice(key);
        let v = self.data.len();
        self.data.extend_from_slice(value.unwrap_or_default());
        self.spans.push([k, v, self.data.len()]);
    }

    fn entry(&self, i: usize) -> Option<(&[u8], &[u8])> {
        let &[k, v, end] = self.spans.get(i)?;
        Some((self.data.get(k..v)?, self.data.get(v..end)?))
    }

    /// The next entry, taken.
    fn pop(&mut self) -> Option<(&[u8], &[u8])> {
        let i = self.next;
        self.next += 1;
        self.entry(i)
    }
}

/// Put the cursor back at the position when entries were read ahead of it: the position is
/// just before the first of them (forward) or just after it (backward).
fn restore(c: &mut Cursor, state: &mut State, ahead: &mut ReadAhead) -> shale::Result<()> {
    let Some((key, _)) = ahead.entry(ahead.next) else {
        return Ok(());
    };
    let key = key.to_vec();
    let forward = ahead.forward;
    ahead.reset();
    c.seek(&key)?;
    *state = if forward { State::Before } else { State::After };
    Ok(())
}

/// What an `Iterator` yields, copied out of the cursor.
struct Entry {
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
}

/// How an `Iterator` presents entries.
#[derive(Clone, Copy)]
struct Shape {
    include_key: bool,
    include_value: bool,
    /// Bytes of the `PrefixedDB` prefix to cut from each key.
    strip: usize,
}

impl Shape {
    fn entry(self, key: &[u8], value: &[u8]) -> Entry {
        Entry {
            key: self
                .include_key
                .then(|| key.get(self.strip..).unwrap_or_default().to_vec()),
            value: self.include_value.then(|| value.to_vec()),
        }
    }

    fn of(self, c: &Cursor) -> Entry {
        self.entry(c.key(), c.value())
    }

    /// The Python value of an entry: `(key, value)`, `key`, `value` or `None`, as plyvel's
    /// `include_key` and `include_value` say. `key` is the full key.
    fn item<'py>(self, py: Python<'py>, key: Option<&[u8]>, value: Option<&[u8]>) -> PyParts<'py> {
        let key = key.map(|k| PyBytes::new(py, k.get(self.strip..).unwrap_or_default()));
        let value = value.map(|v| PyBytes::new(py, v));
        PyParts { key, value }
    }
}

/// The `bytes` of an item, made while the slot is locked; the tuple is made after, since
/// allocating it may run the garbage collector, and with it any Python code.
struct PyParts<'py> {
    key: Option<Bound<'py, PyBytes>>,
    value: Option<Bound<'py, PyBytes>>,
}

impl PyParts<'_> {
    fn into_item(self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(match (self.key, self.value) {
            (Some(k), Some(v)) => PyTuple::new(py, [k, v])?.into_any().unbind(),
            (Some(k), None) => k.into_any().unbind(),
            (None, Some(v)) => v.into_any().unbind(),
            (None, None) => py.None(),
        })
    }
}

/// Step forward (plyvel's `real_next`): the entry after the position, and move past it.
fn step_forward(c: &mut Cursor, state: &mut State, shape: Shape) -> shale::Result<Option<Entry>> {
    match *state {
        State::After => {
            c.next()?;
            if !c.valid() {
                *state = State::AfterStop;
                return Ok(None);
            }
        }
        State::Before => *state = State::After,
        State::BeforeStart => {
            c.seek_to_first()?;
            if !c.valid() {
                return Ok(None);
            }
            *state = State::After;
        }
        State::AfterStop => return Ok(None),
    }
    Ok(Some(shape.of(c)))
}

/// Step back (plyvel's `real_prev`): the entry before the position, and move before it.
fn step_back(c: &mut Cursor, state: &mut State, shape: Shape) -> shale::Result<Option<Entry>> {
    match *state {
        State::After => {}
        State::Before => {
            c.prev()?;
            if !c.valid() {
                *state = State::BeforeStart;
                return Ok(None);
            }
        }
        State::BeforeStart => return Ok(None),
        State::AfterStop => {
            c.seek_to_last()?;
            if !c.valid() {
                return Ok(None);
            }
        }
    }
    let out = shape.of(c);
    c.prev()?;
    *state = if c.valid() {
        State::After
    } else {
        State::BeforeStart
    };
    Ok(Some(out))
}

/// After a step that continued a run in direction `forward` (state `After`), read the next
/// batch of entries. Forward the cursor is on the entry just returned; backward, on the next
/// one to return. A failure drops the batch and puts the cursor back, to be met again by the
/// step that reaches it.
fn read_ahead(
    c: &mut Cursor,
    state: &mut State,
    ahead: &mut ReadAhead,
    forward: bool,
    include_value: bool,
) -> shale::Result<()> {
    let anchor = c.key().to_vec();
    ahead.clear();
    ahead.forward = forward;
    let n = ahead.batch;
    ahead.batch = (n * 2).min(MAX_BATCH);
    let r = (|| -> shale::Result<()> {
        for _ in 0..n {
            if forward {
                c.next()?;
                if !c.valid() {
                    *state = State::AfterStop;
                    break;
                }
                ahead.push(c.key(), include_value.then(|| c.value()));
            } else {
                ahead.push(c.key(), include_value.then(|| c.value()));
                c.prev()?;
                if !c.valid() {
                    *state = State::BeforeStart;
                    break;
                }
            }
            if ahead.data.len() >= MAX_BATCH_BYTES {
                break;
            }
        }
        Ok(())
    })();
    if r.is_err() {
        ahead.reset();
        c.seek(&anchor)?;
        *state = State::After;
    }
    Ok(())
}

/// One step without the GIL: hand out what another thread read ahead, or put the cursor back
/// if entries were read the other way, then step, then read ahead if this step continues a
/// run.
fn step(
    c: &mut Cursor,
    state: &mut State,
    ahead: &mut ReadAhead,
    forward: bool,
    shape: Shape,
) -> shale::Result<Option<Entry>> {
    if ahead.pending(forward) {
        return Ok(ahead.pop().map(|(k, v)| shape.entry(k, v)));
    }
    restore(c, state, ahead)?;
    let continuing = *state == State::After && ahead.last_forward == Some(forward);
    ahead.last_forward = Some(forward);
    let e = if forward {
        step_forward(c, state, shape)?
    } else {
        step_back(c, state, shape)?
    };
    if e.is_some() && continuing && *state == State::After {
        ahead.batch = ahead.batch.max(FIRST_BATCH);
        read_ahead(c, state, ahead, forward, shape.include_value)?;
    }
    Ok(e)
}

/// A range iterator (plyvel's `Iterator`): iterate it, or move it with `prev()`, `seek()`,
/// `seek_to_start()` and `seek_to_stop()`. Made by `DB.iterator()`, `Snapshot.iterator()`
/// and `PrefixedDB.iterator()`.
#[pyclass(frozen, module = "shale", name = "Iterator")]
pub(crate) struct RangeIterator {
    slot: Arc<CursorSlot>,
    _store: Arc<Store>,
    reverse: bool,
    shape: Shape,
    /// Prepended to `seek` targets (a `PrefixedDB`'s prefix).
    db_prefix: Option<Vec<u8>>,
}

/// The arguments of `iterator()`, before the `PrefixedDB` prefix is applied.
pub(crate) struct RangeArgs {
    pub(crate) reverse: bool,
    pub(crate) start: Option<Vec<u8>>,
    pub(crate) stop: Option<Vec<u8>>,
    pub(crate) include_start: bool,
    pub(crate) include_stop: bool,
    pub(crate) prefix: Option<Vec<u8>>,
    pub(crate) include_key: bool,
    pub(crate) include_value: bool,
    /// Checksums and block cache (plyvel's `verify_checksums` and `fill_cache`).
    pub(crate) read: ReadOptions,
}

impl RangeArgs {
    /// plyvel's defaults: every entry, forward, as `(key, value)`.
    pub(crate) fn all() -> RangeArgs {
        RangeArgs {
            reverse: false,
            start: None,
            stop: None,
            include_start: true,
            include_stop: false,
            prefix: None,
            include_key: true,
            include_value: true,
            read: plyvel_read(false, true),
        }
    }
}

/// plyvel's per-read `verify_checksums` and `fill_cache` as the engine's options: the
/// argument decides whether table blocks' checksums are checked (plyvel's default is not
/// to, as LevelDB's), whatever the store's `Options::verify_checksums` says.
pub(crate) fn plyvel_read(verify_checksums: bool, fill_cache: bool) -> ReadOptions {
    ReadOptions {
        verify_checksums: Some(verify_checksums),
        fill_cache,
    }
}

/// The smallest key after `k`: `k` followed by a zero byte.
fn successor(mut k: Vec<u8>) -> Vec<u8> {
    k.push(0);
    k
}

impl RangeIterator {
    /// plyvel's `Iterator.__init__`: `db_prefix` is a `PrefixedDB`'s prefix, prepended to
    /// `start`, `stop` and `prefix`, and cut from the keys yielded.
    pub(crate) fn open(
        py: Python<'_>,
        store: &Arc<Store>,
        db_prefix: Option<&[u8]>,
        args: RangeArgs,
        snapshot: Option<&shale::Snapshot>,
    ) -> PyResult<RangeIterator> {
        if args.prefix.is_some() && (args.start.is_some() || args.stop.is_some()) {
            return Err(PyTypeError::new_err(
                "'prefix' cannot be used together with 'start' or 'stop'",
            ));
        }
        let mut options = IterOptions {
            read: args.read,
            ..IterOptions::default()
        };
        match (&args.prefix, db_prefix) {
            (Some(p), dp) => options.prefix = Some(concat(dp, p)),
            (None, dp) => {
                options.prefix = dp.map(<[u8]>::to_vec);
                options.lower_bound = args.start.map(|s| {
                    let k = concat(dp, &s);
                    if args.include_start { k } else { successor(k) }
                });
                options.upper_bound = args.stop.map(|s| {
                    let k = concat(dp, &s);
                    if args.include_stop { successor(k) } else { k }
                });
            }
        }
        options.snapshot = snapshot.cloned();
        let state = if args.reverse {
            State::AfterStop
        } else {
            State::BeforeStart
        };
        Ok(RangeIterator {
            slot: open_cursor(py, store, options, state)?,
            _store: Arc::clone(store),
            reverse: args.reverse,
            shape: Shape {
                include_key: args.include_key,
                include_value: args.include_value,
                strip: db_prefix.map_or(0, <[u8]>::len),
            },
            db_prefix: db_prefix.map(<[u8]>::to_vec),
        })
    }

    /// Step in key order (`forward`) or backwards: `None` at the end.
    fn step(&self, py: Python<'_>, forward: bool) -> PyResult<Option<Py<PyAny>>> {
        let shape = self.shape;
        // With the GIL held and no waiting: an entry read ahead, or the end.
        if let Some(mut slot) = self.slot.try_lock() {
            if slot.cursor.is_none() {
                return Err(iterator_closed());
            }
            if slot.ahead.pending(forward) {
                let parts = slot.ahead.pop().map(|(k, v)| {
                    shape.item(
                        py,
                        shape.include_key.then_some(k),
                        shape.include_value.then_some(v),
                    )
                });
                drop(slot);
                return parts.map(|p| p.into_item(py)).transpose();
            }
            let end = if forward {
                State::AfterStop
            } else {
                State::BeforeStart
            };
            if slot.ahead.is_empty() && slot.state == end {
                return Ok(None);
            }
        }
        let entry = self.slot.with_slot(py, move |c, state, ahead| {
            step(c, state, ahead, forward, shape)
        })?;
        entry
            .map(|e| {
                PyParts {
                    key: e.key.map(|k| PyBytes::new(py, &k)),
                    value: e.value.map(|v| PyBytes::new(py, &v)),
                }
                .into_item(py)
            })
            .transpose()
    }

    /// Set the position anew: `f` gets the cursor and the state, with nothing read ahead.
    fn reposition(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut Cursor, &mut State) -> shale::Result<()> + Send,
    ) -> PyResult<()> {
        self.slot.with_slot(py, |c, state, ahead| {
            ahead.reset();
            f(c, state)
        })
    }
}

#[pymethods]
impl RangeIterator {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// The next entry in the iteration order (backwards for a reverse iterator).
    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        self.step(py, !self.reverse)
    }

    /// Move one step back and return the entry stepped over: the same entry the last
    /// `next()` returned. Raises `StopIteration` at the start.
    fn prev(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match self.step(py, self.reverse)? {
            Some(v) => Ok(v),
            None => Err(PyStopIteration::new_err(())),
        }
    }

    /// Move before the first entry of the range (in key order).
    fn seek_to_start(&self, py: Python<'_>) -> PyResult<()> {
        self.reposition(py, |_, state| {
            *state = State::BeforeStart;
            Ok(())
        })
    }

    /// Move after the last entry of the range (in key order).
    fn seek_to_stop(&self, py: Python<'_>) -> PyResult<()> {
        self.reposition(py, |_, state| {
            *state = State::AfterStop;
            Ok(())
        })
    }

    /// Move just before the first entry whose key is `>= target` (within the range), so
    /// that a forward `next()` returns it.
    fn seek(&self, py: Python<'_>, target: &[u8]) -> PyResult<()> {
        let target = concat(self.db_prefix.as_deref(), target);
        self.reposition(py, move |c, state| {
            c.seek(&target)?;
            *state = if c.valid() {
                State::Before
            } else {
                State::AfterStop
            };
            Ok(())
        })
    }

    /// Release the iterator; later calls raise `RuntimeError`. Idempotent.
    fn close(&self, py: Python<'_>) {
        py.detach(|| self.slot.release());
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> bool {
        self.close(py);
        false
    }
}
