//! Python bindings of Shale: the native half (`shale._shale`) of the `shale` package.
//!
//! The API is plyvel 1.5's (`DB`, `WriteBatch`, `Snapshot`, `Iterator`, `RawIterator`,
//! `PrefixedDB`, `destroy_db`, `repair_db`) plus Shale's designs as `DB(design=...)`. The
//! Python half (`python/shale/`) defines the exception classes and re-exports this module;
//! `docs/python.md` in the repository lists where the API differs from plyvel's.
//!
//! Every call that reaches the engine releases the GIL; `store.rs` states the lock rule
//! that makes that safe.

mod admin;
mod batch;
mod db;
mod errors;
mod iter;
mod options;
mod range;
mod snapshot;
mod store;

use std::borrow::Cow;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// `prefix + key` (just `key` without a prefix).
pub(crate) fn concat(prefix: Option<&[u8]>, key: &[u8]) -> Vec<u8> {
    let prefix = prefix.unwrap_or_default();
    let mut k = Vec::with_capacity(prefix.len() + key.len());
    k.extend_from_slice(prefix);
    k.extend_from_slice(key);
    k
}

/// A value argument: `bytes` as it is, any other object with the buffer protocol
/// (`bytearray`, `memoryview`, ...) copied, as plyvel accepts.
pub(crate) fn value_bytes<'a>(value: &'a Bound<'_, PyAny>) -> PyResult<Cow<'a, [u8]>> {
    if let Ok(b) = value.cast::<PyBytes>() {
        return Ok(Cow::Borrowed(b.as_bytes()));
    }
    // The buffer API is not in the stable ABI before Python 3.11: copy through memoryview,
    // which raises TypeError for an object without the buffer protocol.
    let view = value
        .py()
        .import("builtins")?
        .getattr("memoryview")?
        .call1((value,))
        .map_err(|_| errors::not_bytes("value", value))?;
    let copy = view.call_method0("tobytes")?;
    Ok(Cow::Owned(copy.cast::<PyBytes>()?.as_bytes().to_vec()))
}

/// The designs (`design=` names) this build can open, e.g. `["leveldb", "pebblesdb",
/// "wisckey"]`.
#[pyfunction]
fn available_designs() -> Vec<&'static str> {
    shale::Options::available_presets()
}

/// The designs among `available_designs()` whose stores answer iterators (`lsm-trie` places
/// keys by hash and answers point operations only: its iterators raise `UnsupportedError`).
#[pyfunction]
fn scan_designs() -> Vec<&'static str> {
    shale::Options::available_presets()
        .into_iter()
        .filter(|d| shale::Options::preset(d).is_ok_and(|o| o.axes().supports_scans()))
        .collect()
}

/// The native module; `shale/__init__.py` re-exports it.
#[pymodule]
fn _shale(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<db::PyDb>()?;
    m.add_class::<db::PrefixedDB>()?;
    m.add_class::<batch::WriteBatch>()?;
    m.add_class::<snapshot::Snapshot>()?;
    m.add_class::<range::RangeIterator>()?;
    m.add_class::<iter::RawIterator>()?;
    m.add_function(wrap_pyfunction!(available_designs, m)?)?;
    m.add_function(wrap_pyfunction!(scan_designs, m)?)?;
    m.add_function(wrap_pyfunction!(admin::destroy_db, m)?)?;
    m.add_function(wrap_pyfunction!(admin::repair_db, m)?)?;
    Ok(())
}
