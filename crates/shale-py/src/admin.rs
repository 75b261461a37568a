//! `destroy_db` (the engine's, and the directory removed when left empty) and `repair_db`
//! (over the engine's `verify`: the engine has no repair).
//!
//! Both take the store's lock through the engine's file system (`Options::env`), so they
//! fail with `LockedError` while a handle has the store open, as LevelDB's do.

use std::path::Path;

use pyo3::prelude::*;
use shale::{Error, Options};

use crate::errors::{Kind, new_err, to_py};
use crate::options::path_arg;

fn destroy(dir: &Path) -> shale::Result<()> {
    shale::destroy_db(dir, &Options::default())?;
    // Like LevelDB: the directory goes if nothing else is in it, and stays otherwise.
    let _ = std::fs::remove_dir(dir);
    Ok(())
}

/// Delete the store in directory `name`: every file the store wrote, then the directory if
/// it is left empty (files that are not the store's stay). Nothing happens if the directory
/// does not exist. `LockedError` while the store is open.
#[pyfunction]
pub(crate) fn destroy_db(py: Python<'_>, name: &Bound<'_, PyAny>) -> PyResult<()> {
    let dir = path_arg(name)?;
    py.detach(|| destroy(&dir)).map_err(|e| to_py(py, e))
}

/// Check the store in directory `name` and repair what Shale can. Shale's engine recovers
/// a torn log tail by itself when a store opens, and has no repair for damaged tables or
/// MANIFEST yet: this checks every checksum of every file (as `shale verify`) and returns
/// if all are sound; otherwise it raises `UnsupportedError` saying which file and offset are
/// damaged. The keyword arguments are plyvel's, accepted and unused. `LockedError` while
/// the store is open.
#[pyfunction]
#[pyo3(signature = (name, **_options))]
pub(crate) fn repair_db(
    py: Python<'_>,
    name: &Bound<'_, PyAny>,
    _options: Option<&Bound<'_, pyo3::types::PyDict>>,
) -> PyResult<()> {
    let dir = path_arg(name)?;
    let r = py.detach(|| -> shale::Result<()> {
        let options = Options::default();
        let fs = options.env.fs().clone();
        if !fs.exists(&dir)? {
            return Err(Error::InvalidArgument(format!(
                "no store at {}",
                dir.display()
            )));
        }
        let _lock = fs.lock(&dir.join("LOCK"))?;
        shale::verify(&dir, options).map(|_| ())
    });
    match r {
        Ok(()) => Ok(()),
        Err(e @ Error::Corruption { .. }) => Err(new_err(
            py,
            Kind::Unsupported,
            format!(
                "repair_db: {e}; this version of Shale cannot repair a damaged store (the \
                 engine has no repair yet): restore it from a copy, or read what is readable \
                 with a RawIterator and write it to a new store"
            ),
            &[],
        )),
        Err(e) => Err(to_py(py, e)),
    }
}
