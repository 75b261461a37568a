//! `RawIterator`: plyvel's cursor on an entry, stepping under the same cursor slot as the
//! range `Iterator` (both in `range.rs`).
//!
//! Both are safe to share between threads: each step locks the iterator's `CursorSlot`
//! without the GIL (see `store.rs` for the lock rule). Each keeps its store open through an
//! `Arc`, and `DB.close()` drops its cursor, after which every call raises `RuntimeError`.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use shale::{Cursor, IterOptions, ReadOptions};

use crate::errors::invalid_iterator;
use crate::range::{CursorSlot, State, open_cursor};
use crate::store::Store;

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
        read: ReadOptions,
    ) -> PyResult<RawIterator> {
        let options = IterOptions {
            snapshot: snapshot.cloned(),
            read,
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
