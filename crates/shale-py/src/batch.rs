//! `WriteBatch`: puts, deletes and range deletes applied atomically (plyvel's `WriteBatch`).

use std::sync::Arc;

use parking_lot::Mutex;
use pyo3::prelude::*;
use shale::WriteOptions;

use crate::store::Store;
use crate::{concat, value_bytes};

/// Puts and deletes collected in memory and applied atomically by `write()`. As a context
/// manager it writes (and clears) itself on leaving the block; with `transaction=True` it
/// writes nothing if the block raised. Safe to share between threads; collecting does not
/// touch the store, so only `write()` releases the GIL.
#[pyclass(frozen, module = "shale")]
pub(crate) struct WriteBatch {
    store: Arc<Store>,
    /// Locked only with the GIL held, never across a GIL release.
    batch: Mutex<shale::WriteBatch>,
    prefix: Option<Vec<u8>>,
    transaction: bool,
    sync: bool,
}

impl WriteBatch {
    pub(crate) fn new(
        store: &Arc<Store>,
        prefix: Option<Vec<u8>>,
        transaction: bool,
        sync: bool,
    ) -> WriteBatch {
        WriteBatch {
            store: Arc::clone(store),
            batch: Mutex::new(shale::WriteBatch::new()),
            prefix,
            transaction,
            sync,
        }
    }

    fn write_batch(&self, py: Python<'_>, batch: shale::WriteBatch) -> PyResult<()> {
        let sync = self.sync;
        self.store.run(
            py,
            move |db| Ok(db.write_opt(batch, WriteOptions { sync })?),
        )
    }
}

#[pymethods]
impl WriteBatch {
    /// Add a put of `key` (prefixed, for a `PrefixedDB`'s batch) to `value`.
    fn put(&self, key: &[u8], value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.store.check_open()?;
        let value = value_bytes(value)?;
        let mut b = self.batch.lock();
        match &self.prefix {
            Some(p) => b.put(&concat(Some(p), key), &value),
            None => b.put(key, &value),
        }
        Ok(())
    }

    /// Add a delete of `key`.
    fn delete(&self, key: &[u8]) -> PyResult<()> {
        self.store.check_open()?;
        let mut b = self.batch.lock();
        match &self.prefix {
            Some(p) => b.delete(&concat(Some(p), key)),
            None => b.delete(key),
        }
        Ok(())
    }

    /// Add a delete of every key `k` with `start <= k < stop` (`stop` excluded; for a
    /// `PrefixedDB`'s batch, both prefixed): one range tombstone, as `DB.delete_range`,
    /// applied with the batch's other entries in order. `start > stop` raises
    /// `InvalidArgumentError` when the batch is written, and a design without key order
    /// (`lsm-trie`) refuses the whole batch with `UnsupportedError`.
    fn delete_range(&self, start: &[u8], stop: &[u8]) -> PyResult<()> {
        self.store.check_open()?;
        let mut b = self.batch.lock();
        match &self.prefix {
            Some(p) => b.delete_range(&concat(Some(p), start), &concat(Some(p), stop)),
            None => b.delete_range(start, stop),
        }
        Ok(())
    }

    /// Forget every put and delete collected.
    fn clear(&self) -> PyResult<()> {
        self.store.check_open()?;
        self.batch.lock().clear();
        Ok(())
    }

    /// Apply the batch atomically. The batch keeps its contents (plyvel's behaviour), so
    /// writing it again applies them again.
    fn write(&self, py: Python<'_>) -> PyResult<()> {
        self.store.check_open()?;
        let batch = self.batch.lock().clone();
        self.write_batch(py, batch)
    }

    /// The bytes the batch takes in the log.
    fn approximate_size(&self) -> PyResult<usize> {
        self.store.check_open()?;
        Ok(self.batch.lock().approximate_size())
    }

    /// Add every put and delete of `source` after this batch's.
    fn append(&self, source: &Bound<'_, WriteBatch>) -> PyResult<()> {
        self.store.check_open()?;
        let other = source.get().batch.lock().clone();
        self.batch.lock().append(&other);
        Ok(())
    }

    fn __enter__(slf: &Bound<'_, Self>) -> PyResult<Py<Self>> {
        slf.get().store.check_open()?;
        Ok(slf.clone().unbind())
    }

    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        exc_value: Option<&Bound<'_, PyAny>>,
        traceback: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let _ = (exc_value, traceback);
        self.store.check_open()?;
        let batch = std::mem::take(&mut *self.batch.lock());
        if self.transaction && exc_type.is_some() {
            return Ok(());
        }
        self.write_batch(py, batch)
    }
}
