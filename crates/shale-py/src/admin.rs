//! `destroy_db` (the engine's, and the directory removed when left empty) and `repair_db`
//! (the engine's `repair`, LevelDB's `RepairDB`).
//!
//! Both take the store's lock through the engine's file system (`Options::env`), so they
//! fail with `LockedError` while a handle has the store open, as LevelDB's do.

use std::path::Path;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use shale::Options;

use crate::errors::to_py;
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

/// Repair the store in directory `name` as LevelDB's `RepairDB` does (the engine's
/// `shale::repair`): rebuild its MANIFEST and CURRENT from the files in the directory,
/// keeping every table and log record that reads. A table that fails its checks or belongs
/// to another store, and a log of another store, are moved into `name/lost/` (never
/// deleted); so are, once the new MANIFEST is written, the logs converted into tables, the
/// tables merged into new ones and the old MANIFESTs. The store is repaired as the design
/// its newest readable MANIFEST records; `design` (a preset name) is used only when no
/// MANIFEST reads (the default is `leveldb`). plyvel's other keyword options are accepted
/// and unused. Returns what was recovered and what was set aside, as a dict (plyvel returns
/// None). `LockedError` while the store is open, `InvalidArgumentError` for a directory
/// without a store or files that do not fit the design.
#[pyfunction]
#[pyo3(signature = (name, *, design = None, **_options))]
pub(crate) fn repair_db<'py>(
    py: Python<'py>,
    name: &Bound<'py, PyAny>,
    design: Option<String>,
    _options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyDict>> {
    let dir = path_arg(name)?;
    let options = match &design {
        Some(d) => Options::preset(d).map_err(|e| to_py(py, e))?,
        None => Options::default(),
    };
    let r = py
        .detach(|| shale::repair(&dir, options))
        .map_err(|e| to_py(py, e))?;
    report(py, &r)
}

/// The report as a dict.
fn report<'py>(py: Python<'py>, r: &shale::RepairReport) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("tables", r.tables)?;
    d.set_item("entries", r.entries)?;
    d.set_item("bytes", r.bytes)?;
    d.set_item("last_sequence", r.last_sequence)?;
    d.set_item("manifest", &r.manifest)?;
    d.set_item("tables_kept", r.tables_kept)?;
    d.set_item("tables_from_logs", r.tables_from_logs)?;
    d.set_item("tables_merged", r.tables_merged)?;
    let aside = PyList::empty(py);
    for s in &r.set_aside {
        let e = PyDict::new(py);
        e.set_item("name", &s.name)?;
        e.set_item("moved_to", &s.moved_to)?;
        e.set_item("reason", &s.reason)?;
        e.set_item("entries", s.entries)?;
        let (lo, hi) = match &s.key_range {
            Some((lo, hi)) => (Some(PyBytes::new(py, lo)), Some(PyBytes::new(py, hi))),
            None => (None, None),
        };
        e.set_item("smallest", lo)?;
        e.set_item("largest", hi)?;
        aside.append(e)?;
    }
    d.set_item("set_aside", aside)?;
    let logs = PyList::empty(py);
    for l in &r.logs {
        let e = PyDict::new(py);
        e.set_item("name", &l.name)?;
        e.set_item("entries", l.entries)?;
        e.set_item("skipped", l.skipped)?;
        e.set_item("bytes_dropped", l.bytes_dropped)?;
        e.set_item("damage", l.damage.as_deref())?;
        logs.append(e)?;
    }
    d.set_item("logs", logs)?;
    d.set_item("archived", r.archived.clone())?;
    d.set_item("notes", r.notes.clone())?;
    Ok(d)
}
