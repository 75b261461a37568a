//! `Snapshot`: a consistent point-in-time view (plyvel's `Snapshot`).

use std::sync::Arc;

use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::concat;
use crate::errors::snapshot_closed;
use crate::iter::RawIterator;
use crate::range::{RangeArgs, RangeIterator, plyvel_read};
use crate::store::{Store, get};

/// A consistent point-in-time view of the store: `get` and iterators read the state of the
/// moment `DB.snapshot()` was called. Keeps the store open while it lives; `close()` (or
/// `release()`, or leaving a `with` block) lets compaction drop the versions it kept.
/// Safe to share between threads.
#[pyclass(frozen, module = "shale")]
pub(crate) struct Snapshot {
    store: Arc<Store>,
    /// `None` once released. Locked only with the GIL held, never across a GIL release.
    snapshot: Mutex<Option<shale::Snapshot>>,
    /// A `PrefixedDB`'s prefix: prepended to keys given, cut from keys yielded.
    prefix: Option<Vec<u8>>,
}

impl Snapshot {
    pub(crate) fn open(
        py: Python<'_>,
        store: &Arc<Store>,
        prefix: Option<Vec<u8>>,
    ) -> PyResult<Snapshot> {
        let snapshot = store.run(py, |db| Ok(db.snapshot()))?;
        Ok(Snapshot {
            store: Arc::clone(store),
            snapshot: Mutex::new(Some(snapshot)),
            prefix,
        })
    }

    /// The engine snapshot; `RuntimeError` once released or once the store is closed.
    fn current(&self) -> PyResult<shale::Snapshot> {
        if self.store.is_closed() {
            return Err(snapshot_closed());
        }
        self.snapshot.lock().clone().ok_or_else(snapshot_closed)
    }
}

#[pymethods]
impl Snapshot {
    /// As `DB.get`, as of the snapshot.
    #[pyo3(signature = (key, default=None, *, verify_checksums=false, fill_cache=true))]
    fn get(
        &self,
        py: Python<'_>,
        key: &[u8],
        default: Option<Py<PyAny>>,
        verify_checksums: bool,
        fill_cache: bool,
    ) -> PyResult<Py<PyAny>> {
        let s = self.current()?;
        let key = concat(self.prefix.as_deref(), key);
        let read = plyvel_read(verify_checksums, fill_cache);
        get(py, &self.store, &key, default, Some(&s), read)
    }

    fn __iter__(&self, py: Python<'_>) -> PyResult<RangeIterator> {
        let s = self.current()?;
        RangeIterator::open(
            py,
            &self.store,
            self.prefix.as_deref(),
            RangeArgs::all(),
            Some(&s),
        )
    }

    /// As `DB.iterator`, as of the snapshot.
    #[pyo3(signature = (
        *, reverse=false, start=None, stop=None, include_start=true, include_stop=false,
        prefix=None, include_key=true, include_value=true, verify_checksums=false,
        fill_cache=true
    ))]
    #[expect(
        clippy::too_many_arguments,
        reason = "plyvel's iterator takes every option as a keyword"
    )]
    fn iterator(
        &self,
        py: Python<'_>,
        reverse: bool,
        start: Option<&[u8]>,
        stop: Option<&[u8]>,
        include_start: bool,
        include_stop: bool,
        prefix: Option<&[u8]>,
        include_key: bool,
        include_value: bool,
        verify_checksums: bool,
        fill_cache: bool,
    ) -> PyResult<RangeIterator> {
        let s = self.current()?;
        let args = RangeArgs {
            reverse,
            start: start.map(<[u8]>::to_vec),
            stop: stop.map(<[u8]>::to_vec),
            include_start,
            include_stop,
            prefix: prefix.map(<[u8]>::to_vec),
            include_key,
            include_value,
            read: plyvel_read(verify_checksums, fill_cache),
        };
        RangeIterator::open(py, &self.store, self.prefix.as_deref(), args, Some(&s))
    }

    /// As `DB.raw_iterator`, as of the snapshot (over the whole store, as plyvel's).
    #[pyo3(signature = (*, verify_checksums=false, fill_cache=true))]
    fn raw_iterator(
        &self,
        py: Python<'_>,
        verify_checksums: bool,
        fill_cache: bool,
    ) -> PyResult<RawIterator> {
        let s = self.current()?;
        let read = plyvel_read(verify_checksums, fill_cache);
        RawIterator::open(py, &self.store, Some(&s), read)
    }

    /// Release the snapshot; later calls raise `RuntimeError`. Idempotent. Iterators made
    /// from it keep reading it.
    fn close(&self) {
        let s = self.snapshot.lock().take();
        drop(s);
    }

    /// The same as `close()`.
    fn release(&self) {
        self.close();
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, PyTuple>) -> bool {
        self.close();
        false
    }
}
