//! The open store that a `DB` and everything made from it (iterators, snapshots, batches,
//! prefixed views) share.
//!
//! # Threads and the GIL
//!
//! Every call that reaches the engine runs with the GIL released (`Python::detach`), under a
//! read lock of `db`; `close()` takes the write lock, so it waits for calls in flight and
//! every later call finds `None` and raises `RuntimeError`. The one rule that keeps this
//! free of deadlocks: **no lock of this crate is held while the GIL is being acquired**.
//! Each lock is taken and released inside the closure run without the GIL, or taken with
//! the GIL held and released before the GIL is next let go. A thread that holds the GIL
//! and waits for a lock therefore waits only for a thread that needs nothing from Python.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::{Mutex, RwLock};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use shale::Db;

use crate::errors::{Failure, closed, to_py};

/// What `close()` does to each live cursor: drop the engine cursor (and what it pins).
/// Implemented by the iterators' cursor slot (`range.rs`), so this module needs to know
/// nothing of iterators.
pub(crate) trait Release: Send + Sync {
    /// Drop the engine cursor; later steps raise `RuntimeError`.
    fn release(&self);
}

/// A store and the cursors opened on it.
pub(crate) struct Store {
    /// `None` once closed.
    db: RwLock<Option<Db>>,
    /// Set at the start of `close()`: lets cheap checks (a batch's `put`) fail fast without
    /// waiting for the write lock.
    closed: AtomicBool,
    /// The cursors of live iterators, dropped by `close()` so that their tables are released
    /// with the store (plyvel closes its iterators the same way).
    cursors: Mutex<Vec<Weak<dyn Release>>>,
}

impl Store {
    pub(crate) fn new(db: Db) -> Arc<Store> {
        Arc::new(Store {
            db: RwLock::new(Some(db)),
            closed: AtomicBool::new(false),
            cursors: Mutex::new(Vec::new()),
        })
    }

    /// True once `close()` has started.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// `RuntimeError` if the store is closed.
    pub(crate) fn check_open(&self) -> PyResult<()> {
        if self.is_closed() {
            Err(closed())
        } else {
            Ok(())
        }
    }

    /// Run `f` on the store without the GIL. `RuntimeError` if the store is closed.
    pub(crate) fn run<R, F>(&self, py: Python<'_>, f: F) -> PyResult<R>
    where
        R: Send,
        F: FnOnce(&Db) -> Result<R, Failure> + Send,
    {
        let r = py.detach(|| self.run_detached(f));
        r.map_err(|e| match e {
            Failure::Engine(e) => to_py(py, e),
            Failure::Closed => closed(),
        })
    }

    /// The part of [`Store::run`] that runs without the GIL.
    pub(crate) fn run_detached<R, F>(&self, f: F) -> Result<R, Failure>
    where
        F: FnOnce(&Db) -> Result<R, Failure>,
    {
        let guard = self.db.read();
        match guard.as_ref() {
            Some(db) => f(db),
            None => Err(Failure::Closed),
        }
    }

    /// Remember a cursor so that `close()` can drop it.
    pub(crate) fn register<T: Release + 'static>(&self, slot: &Arc<T>) {
        let mut cursors = self.cursors.lock();
        // Forget the iterators that are gone; amortized, since the list at most doubles.
        if cursors.len() >= 64 && cursors.len().is_power_of_two() {
            cursors.retain(|w| w.strong_count() > 0);
        }
        let weak: Weak<T> = Arc::downgrade(slot);
        cursors.push(weak);
    }

    /// Close: drop every live cursor, then close the engine. Idempotent.
    pub(crate) fn close(&self, py: Python<'_>) -> PyResult<()> {
        self.closed.store(true, Ordering::Release);
        let r = py.detach(|| {
            let mut guard = self.db.write();
            let Some(db) = guard.take() else {
                return Ok(());
            };
            let cursors = std::mem::take(&mut *self.cursors.lock());
            for slot in cursors.iter().filter_map(Weak::upgrade) {
                slot.release();
            }
            db.close()
        });
        r.map_err(|e| to_py(py, e))
    }
}

/// `get` of a `DB`, a `PrefixedDB` or a `Snapshot`: the value of `key` (at `snapshot` if
/// given, read as `read` says), or `default`.
pub(crate) fn get(
    py: Python<'_>,
    store: &Store,
    key: &[u8],
    default: Option<Py<PyAny>>,
    snapshot: Option<&shale::Snapshot>,
    read: shale::ReadOptions,
) -> PyResult<Py<PyAny>> {
    let found = store.run(py, |db| Ok(db.get_opt(key, snapshot, read)?))?;
    Ok(match found {
        Some(v) => PyBytes::new(py, &v).into_any().unbind(),
        None => default.unwrap_or_else(|| py.None()),
    })
}
