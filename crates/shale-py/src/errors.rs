//! Engine errors as Python exceptions.
//!
//! The exception classes are defined in Python (`shale/_errors.py`), because plyvel's
//! `IOError` derives from two classes (`Error` and the built-in `OSError`), which a class
//! made with pyo3's `create_exception!` cannot. They are looked up once and cached.

use pyo3::IntoPyObjectExt;
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

/// The exception classes of `shale._errors`, by their Python names.
#[derive(Clone, Copy)]
pub(crate) enum Kind {
    Error,
    Io,
    Locked,
    Corruption,
    InvalidArgument,
    Unsupported,
    ReadOnly,
    IteratorInvalid,
}

impl Kind {
    const ALL: usize = 8;

    fn name(self) -> &'static str {
        match self {
            Kind::Error => "Error",
            Kind::Io => "IOError",
            Kind::Locked => "LockedError",
            Kind::Corruption => "CorruptionError",
            Kind::InvalidArgument => "InvalidArgumentError",
            Kind::Unsupported => "UnsupportedError",
            Kind::ReadOnly => "ReadOnlyError",
            Kind::IteratorInvalid => "IteratorInvalidError",
        }
    }
}

static CLASSES: [PyOnceLock<Py<PyType>>; Kind::ALL] = [const { PyOnceLock::new() }; Kind::ALL];

fn class(py: Python<'_>, kind: Kind) -> PyResult<&Bound<'_, PyType>> {
    let cell = &CLASSES[kind as usize];
    cell.get_or_try_init(py, || {
        let cls = py.import("shale._errors")?.getattr(kind.name())?;
        Ok::<_, PyErr>(cls.cast_into::<PyType>()?.unbind())
    })
    .map(|c| c.bind(py))
}

/// An exception of `kind` with `message`, and attributes set on it.
pub(crate) fn new_err(
    py: Python<'_>,
    kind: Kind,
    message: String,
    attrs: &[(&str, Py<PyAny>)],
) -> PyErr {
    let make = || -> PyResult<PyErr> {
        let exc = class(py, kind)?.call1((message.clone(),))?;
        for (name, value) in attrs {
            exc.setattr(*name, value.bind(py))?;
        }
        Ok(PyErr::from_value(exc))
    };
    // Failing to build the exception (the Python half of the package is broken) must still
    // tell the caller what the store said.
    make().unwrap_or_else(|e| {
        PyRuntimeError::new_err(format!("{message} (and raising it failed: {e})"))
    })
}

/// The Python exception for an engine error; its message is the engine's, which names the
/// file and offset where it knows them.
pub(crate) fn to_py(py: Python<'_>, e: shale::Error) -> PyErr {
    let message = e.to_string();
    let path = |p: &std::path::Path| p.display().to_string();
    match &e {
        shale::Error::Io {
            path: p, source, ..
        } => {
            let attrs = [
                source.raw_os_error().and_then(|n| attr(py, "errno", n)),
                p.as_deref().and_then(|p| attr(py, "path", path(p))),
            ];
            new_err(
                py,
                Kind::Io,
                message,
                &attrs.into_iter().flatten().collect::<Vec<_>>(),
            )
        }
        shale::Error::Corruption { file, offset, .. } => {
            let attrs = [attr(py, "file", path(file)), attr(py, "offset", *offset)];
            new_err(
                py,
                Kind::Corruption,
                message,
                &attrs.into_iter().flatten().collect::<Vec<_>>(),
            )
        }
        shale::Error::Locked { path: p } => {
            let attrs: Vec<_> = attr(py, "path", path(p)).into_iter().collect();
            new_err(py, Kind::Locked, message, &attrs)
        }
        shale::Error::InvalidArgument(_) => new_err(py, Kind::InvalidArgument, message, &[]),
        shale::Error::Unsupported(_) => new_err(py, Kind::Unsupported, message, &[]),
        shale::Error::ReadOnly(_) | shale::Error::ReadOnlyOpen { .. } => {
            new_err(py, Kind::ReadOnly, message, &[])
        }
        shale::Error::Closed => closed(),
        _ => new_err(py, Kind::Error, message, &[]),
    }
}

/// An attribute to set on an exception.
fn attr<'py, T: IntoPyObject<'py>>(
    py: Python<'py>,
    name: &'static str,
    value: T,
) -> Option<(&'static str, Py<PyAny>)> {
    value.into_py_any(py).ok().map(|v| (name, v))
}

/// Use after `close()`: plyvel's `RuntimeError`.
pub(crate) fn closed() -> PyErr {
    PyRuntimeError::new_err("Database is closed")
}

/// Use of a closed iterator, or of any iterator after its database closed.
pub(crate) fn iterator_closed() -> PyErr {
    PyRuntimeError::new_err("Database or iterator is closed")
}

/// Use of a released snapshot, or of any snapshot after its database closed.
pub(crate) fn snapshot_closed() -> PyErr {
    PyRuntimeError::new_err("Database or snapshot is closed")
}

/// A raw iterator that is not positioned on an entry.
pub(crate) fn invalid_iterator(py: Python<'_>) -> PyErr {
    new_err(
        py,
        Kind::IteratorInvalid,
        "the iterator is not positioned on an entry".to_string(),
        &[],
    )
}

/// A `TypeError` for an argument that must be `bytes`.
pub(crate) fn not_bytes(what: &str, got: &Bound<'_, PyAny>) -> PyErr {
    let ty = got
        .get_type()
        .name()
        .map_or_else(|_| "?".to_string(), |n| n.to_string());
    PyTypeError::new_err(format!("{what} must be bytes, not {ty}"))
}

/// What went wrong inside a call that ran without the GIL: the engine failed, or the store
/// (or the iterator or snapshot) was closed.
pub(crate) enum Failure {
    Engine(shale::Error),
    Closed,
}

impl From<shale::Error> for Failure {
    fn from(e: shale::Error) -> Self {
        Failure::Engine(e)
    }
}
