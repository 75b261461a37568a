//! `DB(...)` arguments to engine `Options`: plyvel's names first, then Shale's design axes.

use std::path::PathBuf;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use shale::options::{LayoutKind, MemoryKind};
use shale::{Compression, Options, PresetSettings, ValuesKind};

use crate::errors::{Kind, new_err, to_py};

/// A store's directory from `str`, `bytes` or `os.PathLike`, as plyvel accepts.
pub(crate) fn path_arg(name: &Bound<'_, PyAny>) -> PyResult<PathBuf> {
    if let Ok(b) = name.cast::<PyBytes>() {
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            return Ok(PathBuf::from(std::ffi::OsStr::from_bytes(b.as_bytes())));
        }
        #[cfg(not(unix))]
        {
            return std::str::from_utf8(b.as_bytes())
                .map(PathBuf::from)
                .map_err(|e| PyValueError::new_err(format!("'name' is not UTF-8: {e}")));
        }
    }
    name.extract::<PathBuf>().map_err(|_| {
        PyTypeError::new_err("'name' arg must be a byte string, a unicode string or a path")
    })
}

/// A string option given as `str` or `bytes`.
fn text_arg(what: &str, v: &Bound<'_, PyAny>) -> PyResult<String> {
    if v.is_instance_of::<PyString>() {
        return v.extract::<String>();
    }
    if let Ok(b) = v.cast::<PyBytes>() {
        return Ok(String::from_utf8_lossy(b.as_bytes()).into_owned());
    }
    Err(PyTypeError::new_err(format!("'{what}' must be a string")))
}

/// Every `DB(...)` option, as given.
pub(crate) struct OpenArgs<'py> {
    pub(crate) create_if_missing: bool,
    pub(crate) error_if_exists: bool,
    pub(crate) write_buffer_size: Option<usize>,
    pub(crate) max_open_files: Option<usize>,
    pub(crate) lru_cache_size: Option<usize>,
    pub(crate) block_size: Option<usize>,
    pub(crate) block_restart_interval: Option<usize>,
    pub(crate) max_file_size: Option<u64>,
    pub(crate) compression: Option<Bound<'py, PyAny>>,
    pub(crate) bloom_filter_bits: Option<usize>,
    pub(crate) comparator: Option<Bound<'py, PyAny>>,
    pub(crate) comparator_name: Option<Bound<'py, PyAny>>,
    pub(crate) design: Option<String>,
    pub(crate) settings: Option<String>,
    pub(crate) layout: Option<String>,
    pub(crate) values: Option<String>,
    pub(crate) memory: Option<String>,
    pub(crate) min_separated_value_size: Option<usize>,
    pub(crate) vlog_memtable_value_max: Option<usize>,
    pub(crate) max_background_compactions: Option<usize>,
    pub(crate) mmap_reads: Option<bool>,
    pub(crate) mmap_log_writes: Option<bool>,
    pub(crate) memtable_bloom_ratio: Option<f64>,
    pub(crate) min_memtables_to_merge: Option<usize>,
}

impl OpenArgs<'_> {
    /// The engine options for the store at `path`: the design's; without one, the store's
    /// own (its options record) when a store exists there, else `Options::default()`;
    /// then each option given.
    pub(crate) fn to_options(&self, py: Python<'_>, path: &std::path::Path) -> PyResult<Options> {
        if self.comparator.is_some() != self.comparator_name.is_some() {
            return Err(PyValueError::new_err(
                "'comparator' and 'comparator_name' must be specified together",
            ));
        }
        if self.comparator.is_some() {
            return Err(new_err(
                py,
                Kind::Unsupported,
                "custom comparators are not supported: Shale orders keys bytewise".to_string(),
                &[],
            ));
        }
        let settings = match self.settings.as_deref() {
            None => PresetSettings::Tuned,
            Some(s) => {
                PresetSettings::parse(s).map_err(|_| choice("settings", s, "'tuned' or 'paper'"))?
            }
        };
        if self.settings.is_some() && self.design.is_none() {
            return Err(PyValueError::new_err(
                "'settings' chooses a design's settings: give 'design' too",
            ));
        }
        let mut o = match &self.design {
            Some(d) => Options::preset_with(d, settings).map_err(|e| to_py(py, e))?,
            None if path.join("CURRENT").exists() => {
                shale::load_options(path, Options::default()).map_err(|e| to_py(py, e))?
            }
            None => Options::default(),
        };
        o.create_if_missing = self.create_if_missing;
        o.error_if_exists = self.error_if_exists;
        set(&mut o.write_buffer_size, self.write_buffer_size);
        set(&mut o.max_open_files, self.max_open_files);
        set(&mut o.block_cache_bytes, self.lru_cache_size);
        set(&mut o.table.block_size, self.block_size);
        set(
            &mut o.table.block_restart_interval,
            self.block_restart_interval,
        );
        set(&mut o.target_file_size, self.max_file_size);
        set(&mut o.table.bloom_bits_per_key, self.bloom_filter_bits);
        set(
            &mut o.min_separated_value_size,
            self.min_separated_value_size,
        );
        set(&mut o.vlog_memtable_value_max, self.vlog_memtable_value_max);
        set(
            &mut o.max_background_compactions,
            self.max_background_compactions,
        );
        set(&mut o.mmap_reads, self.mmap_reads);
        set(&mut o.mmap_log_writes, self.mmap_log_writes);
        set(&mut o.memtable_bloom_ratio, self.memtable_bloom_ratio);
        if let Some(n) = self.min_memtables_to_merge {
            o.set_memtables_to_merge(n);
        }
        o.table.compression = compression(self.compression.as_ref())?;
        if let Some(l) = &self.layout {
            o.layout = match l.as_str() {
                "leveled" => LayoutKind::Leveled,
                "flsm" => LayoutKind::Flsm,
                "lwc" => LayoutKind::Lwc,
                _ => return Err(choice("layout", l, "'leveled', 'flsm' or 'lwc'")),
            };
            o.table_format = shale::Axes::table_for(o.layout);
        }
        if let Some(v) = &self.values {
            o.values = match v.as_str() {
                "inline" => ValuesKind::Inline,
                "vlog" => ValuesKind::Vlog,
                _ => return Err(choice("values", v, "'inline' or 'vlog'")),
            };
        }
        if let Some(m) = &self.memory {
            o.memory = match m.as_str() {
                "skiplist" => MemoryKind::SkipList,
                "flodb" => MemoryKind::FloDb,
                _ => return Err(choice("memory", m, "'skiplist' or 'flodb'")),
            };
        }
        Ok(o)
    }
}

fn set<T>(field: &mut T, v: Option<T>) {
    if let Some(v) = v {
        *field = v;
    }
}

fn choice(what: &str, got: &str, expected: &str) -> PyErr {
    PyValueError::new_err(format!("'{what}' must be {expected}, not {got:?}"))
}

/// plyvel's `compression`: `None` (no compression, also every design's default) or
/// `'snappy'`; Shale has no Snappy and uses LZ4, the codec of the same kind, for it and for
/// `'lz4'`; `'zstd'` is Zstandard.
pub(crate) fn compression(v: Option<&Bound<'_, PyAny>>) -> PyResult<Compression> {
    let Some(v) = v else {
        return Ok(Compression::None);
    };
    match text_arg("compression", v)?.as_str() {
        "snappy" | "lz4" => Ok(Compression::Lz4),
        "zstd" => Ok(Compression::Zstd),
        "none" => Ok(Compression::None),
        other => Err(choice(
            "compression",
            other,
            "None, 'none', 'snappy', 'lz4' or 'zstd'",
        )),
    }
}

/// `design`, `layout`, `values` or `memory` given as `str` or `bytes`.
pub(crate) fn opt_text(what: &str, v: Option<&Bound<'_, PyAny>>) -> PyResult<Option<String>> {
    v.map(|v| text_arg(what, v)).transpose()
}
