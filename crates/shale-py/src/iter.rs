//! The cursor slot that every iterator steps under, and `RawIterator` (plyvel's cursor on
//! an entry). `range.rs` builds plyvel's range `Iterator` on the same slot.
//!
//! Both are safe to share between threads: each step locks the iterator's `CursorSlot`
//! without the GIL (see `store.rs` for the lock rule). Each keeps its store open through an
//! `Arc`, and `DB.close()` drops its cursor, after which every call raises `RuntimeError`.

use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use shale::{Cursor, IterOptions};

use crate::errors::{Failure, invalid_iterator, iterator_closed, to_py};
use crate::range::{ReadAhead, State};
use crate::store::Store;

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
    fn with<R: Send>(
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

/// A cursor on one entry (plyvel's `RawIterator`), over the whole store: not positioned
/// until a seek. Made by `DB.raw_iterator()` and `Snapshot.raw_iterator()`.
#[pyclass(frozen, module = "shale")]
pub(crate) struct RawIterator {
    slot: Arc<CursorSlot>,
    _store: Arc<Store>,
}

impl RawIterator {
    pub(crate) fn open(
        py: Python<'_>,
        store: &Arc<Store>,
        snapshot: Option<&shale::Snapshot>,
    ) -> PyResult<RawIterator> {
        let options = IterOptions {
            snapshot: snapshot.cloned(),
            ..IterOptions::default()
        };
        Ok(RawIterator {
            slot: open_cursor(py, store, options, State::BeforeStart)?,
            _store: Arc::clone(store),
        })
    }

    /// Copy something out of the cursor, which must be valid.
    fn read<R: Send>(&self, py: Python<'_>, f: impl FnOnce(&Cursor) -> R + Send) -> PyResult<R> {
        self.slot
            .with(py, |c| Ok(c.valid().then(|| f(c))))?
            .ok_or_else(|| invalid_iterator(py))
    }

    /// Move the cursor, which must be valid.
    fn step(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut Cursor) -> shale::Result<()> + Send,
    ) -> PyResult<()> {
        let moved = self.slot.with(py, |c| {
            if !c.valid() {
                return Ok(false);
            }
            f(c).map(|()| true)
        })?;
        if moved {
            Ok(())
        } else {
            Err(invalid_iterator(py))
        }
    }
}

#[pymethods]
impl RawIterator {
    /// True when positioned on an entry.
    fn valid(&self, py: Python<'_>) -> PyResult<bool> {
        self.slot.with(py, |c| Ok(c.valid()))
    }

    /// Position on the first entry.
    fn seek_to_first(&self, py: Python<'_>) -> PyResult<()> {
        self.slot.with(py, |c| c.seek_to_first())
    }

    /// Position on the last entry.
    fn seek_to_last(&self, py: Python<'_>) -> PyResult<()> {
        self.slot.with(py, |c| c.seek_to_last())
    }

    /// Position on the first entry whose key is `>= target`.
    fn seek(&self, py: Python<'_>, target: &[u8]) -> PyResult<()> {
        self.slot.with(py, |c| c.seek(target))
    }

    /// Move to the next entry. `IteratorInvalidError` when not positioned.
    fn next(&self, py: Python<'_>) -> PyResult<()> {
        self.step(py, Cursor::next)
    }

    /// Move to the previous entry. `IteratorInvalidError` when not positioned.
    fn prev(&self, py: Python<'_>) -> PyResult<()> {
        self.step(py, Cursor::prev)
    }

    /// The current key. `IteratorInvalidError` when not positioned.
    fn key<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let k = self.read(py, |c| c.key().to_vec())?;
        Ok(PyBytes::new(py, &k))
    }

    /// The current value. `IteratorInvalidError` when not positioned.
    fn value<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let v = self.read(py, |c| c.value().to_vec())?;
        Ok(PyBytes::new(py, &v))
    }

    /// The current `(key, value)`. `IteratorInvalidError` when not positioned.
    fn item<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let (k, v) = self.read(py, |c| (c.key().to_vec(), c.value().to_vec()))?;
        PyTuple::new(py, [PyBytes::new(py, &k), PyBytes::new(py, &v)])
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
