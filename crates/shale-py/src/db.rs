//! `DB` (an open store) and `PrefixedDB` (a view of the keys under a prefix).

use std::sync::Arc;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use shale::{Db, WriteOptions};

use crate::batch::WriteBatch;
use crate::iter::RawIterator;
use crate::options::{OpenArgs, opt_text, path_arg};
use crate::range::{RangeArgs, RangeIterator, plyvel_read};
use crate::snapshot::Snapshot;
use crate::store::{Store, get};
use crate::{concat, value_bytes};

fn put(
    py: Python<'_>,
    store: &Store,
    key: &[u8],
    value: &Bound<'_, PyAny>,
    sync: bool,
) -> PyResult<()> {
    let value = value_bytes(value)?;
    let value: &[u8] = &value;
    store.run(py, |db| {
        Ok(db.put_opt(key, value, WriteOptions { sync })?)
    })
}

fn delete(py: Python<'_>, store: &Store, key: &[u8], sync: bool) -> PyResult<()> {
    store.run(py, |db| Ok(db.delete_opt(key, WriteOptions { sync })?))
}

/// `Db::delete_range_opt`: one range tombstone over `[start, stop)`.
fn delete_range(
    py: Python<'_>,
    store: &Store,
    start: &[u8],
    stop: &[u8],
    sync: bool,
) -> PyResult<()> {
    store.run(py, |db| {
        Ok(db.delete_range_opt(start, stop, WriteOptions { sync })?)
    })
}

/// plyvel's `approximate_sizes`: the engine's estimate (`Db::approximate_sizes`) of the
/// table bytes each `[start, stop)` takes, from the tables' indexes, as LevelDB's.
fn approximate_sizes(
    py: Python<'_>,
    store: &Store,
    ranges: &Bound<'_, PyTuple>,
) -> PyResult<Vec<u64>> {
    let mut rs = Vec::with_capacity(ranges.len());
    for r in ranges.iter() {
        let (start, stop): (Bound<'_, PyAny>, Bound<'_, PyAny>) = r.extract()?;
        match (start.cast::<PyBytes>(), stop.cast::<PyBytes>()) {
            (Ok(a), Ok(b)) => rs.push((a.as_bytes().to_vec(), b.as_bytes().to_vec())),
            _ => {
                return Err(PyTypeError::new_err(
                    "Start and stop of range must be byte strings",
                ));
            }
        }
    }
    store.run(py, |db| {
        let ranges: Vec<(&[u8], &[u8])> = rs.iter().map(|(a, b)| (&a[..], &b[..])).collect();
        Ok(db.approximate_sizes(&ranges)?)
    })
}

/// plyvel's property names mapped to Shale's, and Shale's own.
fn property(db: &Db, name: &str) -> Option<String> {
    if let Some(level) = name.strip_prefix("leveldb.num-files-at-level") {
        return db.property(&format!("shale.num-files-at-level{level}"));
    }
    match name {
        "leveldb.stats" => db.property("shale.stats"),
        "leveldb.approximate-memory-usage" => {
            let n = |p: &str| db.property(p).and_then(|v| v.parse::<u64>().ok());
            Some((n("shale.memtable-bytes")? + n("shale.block-cache-usage")?).to_string())
        }
        _ => db.property(name),
    }
}

/// An open store (plyvel's `DB`): `DB(name, *, create_if_missing=False, ...)`.
///
/// plyvel's options (`create_if_missing`, `error_if_exists`, `write_buffer_size`,
/// `max_open_files`, `lru_cache_size`, `block_size`, `block_restart_interval`,
/// `max_file_size`, `compression`, `bloom_filter_bits`) and Shale's: `design` (a name from
/// `available_designs()`), `settings` (`tuned`, the default, or `paper`: the design's
/// settings as its paper measured it, LevelDB's 4 MiB memtable), `layout` (`leveled`,
/// `flsm`), `values` (`inline`, `vlog`), `memory` (`skiplist`), `min_separated_value_size`,
/// `vlog_memtable_value_max` (separated values of at most this many bytes kept in the
/// memtable beside their pointers; 0: pointers only), `max_background_compactions`, `mmap_reads` (read table files through memory maps, as
/// LevelDB does: on in every design, off in `Options::default()`), `mmap_log_writes` (copy
/// small log appends into a writable memory map instead of a `write(2)` each: on in every
/// design, off in `Options::default()`), `memtable_bloom_ratio`
/// (a bloom filter over each memtable's keys, this fraction of its bytes, 0 to 0.25;
/// default 0, none), `min_memtables_to_merge` (frozen memtables flushed as one; room is made
/// for them).
/// Options not given come from the design; without one, from the store's own record when
/// the store exists, else `Options::default()`. With `read_only=True` the store is opened as
/// `Db::open_read_only` does (RocksDB's `OpenForReadOnly`): nothing is written, no lock is
/// taken (a writer may hold the store meanwhile), the view is the store as of the open, and
/// every write raises `ReadOnlyError`. With `secondary=True` it is opened as
/// `Db::open_secondary` does: read-only as above, and `try_catch_up()` moves the view forward
/// to what a running writer has committed and logged since (RocksDB's secondary instance).
///
/// All methods may be called from several threads; each call that reaches the store
/// releases the GIL.
#[pyclass(frozen, module = "shale", name = "DB")]
pub(crate) struct PyDb {
    store: Arc<Store>,
    name: Py<PyAny>,
}

#[pymethods]
impl PyDb {
    /// Open the store in directory `name` (`str`, `bytes` or a path). plyvel's options
    /// first, then Shale's: `design` names a preset (`available_designs()`), `layout`,
    /// `values` and `memory` choose one axis each.
    #[new]
    #[pyo3(signature = (
        name, *, create_if_missing=false, error_if_exists=false, paranoid_checks=None,
        write_buffer_size=None, max_open_files=None, lru_cache_size=None, block_size=None,
        block_restart_interval=None, max_file_size=None, compression=None,
        bloom_filter_bits=None, comparator=None, comparator_name=None, design=None,
        settings=None, layout=None, values=None, memory=None, min_separated_value_size=None,
        vlog_memtable_value_max=None, max_background_compactions=None, mmap_reads=None, mmap_log_writes=None, memtable_bloom_ratio=None,
        min_memtables_to_merge=None, read_only=false, secondary=false
    ))]
    #[expect(
        clippy::too_many_arguments,
        reason = "plyvel's constructor takes every option as a keyword"
    )]
    fn new<'py>(
        py: Python<'py>,
        name: Bound<'py, PyAny>,
        create_if_missing: bool,
        error_if_exists: bool,
        paranoid_checks: Option<bool>,
        write_buffer_size: Option<usize>,
        max_open_files: Option<usize>,
        lru_cache_size: Option<usize>,
        block_size: Option<usize>,
        block_restart_interval: Option<usize>,
        max_file_size: Option<u64>,
        compression: Option<Bound<'py, PyAny>>,
        bloom_filter_bits: Option<usize>,
        comparator: Option<Bound<'py, PyAny>>,
        comparator_name: Option<Bound<'py, PyAny>>,
        design: Option<Bound<'py, PyAny>>,
        settings: Option<Bound<'py, PyAny>>,
        layout: Option<Bound<'py, PyAny>>,
        values: Option<Bound<'py, PyAny>>,
        memory: Option<Bound<'py, PyAny>>,
        min_separated_value_size: Option<usize>,
        vlog_memtable_value_max: Option<usize>,
        max_background_compactions: Option<usize>,
        mmap_reads: Option<bool>,
        mmap_log_writes: Option<bool>,
        memtable_bloom_ratio: Option<f64>,
        min_memtables_to_merge: Option<usize>,
        read_only: bool,
        secondary: bool,
    ) -> PyResult<PyDb> {
        // Shale checks every block's checksum on every read: paranoid already.
        let _ = paranoid_checks;
        let path = path_arg(&name)?;
        let args = OpenArgs {
            create_if_missing,
            error_if_exists,
            write_buffer_size,
            max_open_files,
            lru_cache_size,
            block_size,
            block_restart_interval,
            max_file_size,
            compression,
            bloom_filter_bits,
            comparator,
            comparator_name,
            design: opt_text("design", design.as_ref())?,
            settings: opt_text("settings", settings.as_ref())?,
            layout: opt_text("layout", layout.as_ref())?,
            values: opt_text("values", values.as_ref())?,
            memory: opt_text("memory", memory.as_ref())?,
            min_separated_value_size,
            vlog_memtable_value_max,
            max_background_compactions,
            mmap_reads,
            mmap_log_writes,
            memtable_bloom_ratio,
            min_memtables_to_merge,
        };
        let options = args.to_options(py, std::path::Path::new(&path))?;
        let db = py
            .detach(|| {
                if secondary {
                    Db::open_secondary(&path, options)
                } else if read_only {
                    Db::open_read_only(&path, options)
                } else {
                    Db::open(&path, options)
                }
            })
            .map_err(|e| crate::errors::to_py(py, e))?;
        Ok(PyDb {
            store: Store::new(db),
            name: name.unbind(),
        })
    }

    /// The `name` the store was opened with.
    #[getter]
    fn name(&self, py: Python<'_>) -> Py<PyAny> {
        self.name.clone_ref(py)
    }

    /// True after `close()`.
    #[getter]
    fn closed(&self) -> bool {
        self.store.is_closed()
    }

    /// Close the store: wait for calls in flight, close every iterator, make the log
    /// durable and release the lock. Later calls raise `RuntimeError`. Idempotent. A store
    /// is also closed when the last object using it (iterators and snapshots included) is
    /// gone.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        self.store.close(py)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let this = slf.get();
        Ok(format!(
            "<shale.DB with name {}{} at {:#x}>",
            this.name.bind(slf.py()).repr()?,
            if this.store.is_closed() {
                " (closed)"
            } else {
                ""
            },
            slf.as_ptr() as usize
        ))
    }

    /// The value of `key`, or `default` if absent. As in plyvel, `verify_checksums` checks
    /// the checksums of the table blocks read (off by default), and `fill_cache=False`
    /// keeps the blocks read out of the block cache.
    #[pyo3(signature = (key, default=None, *, verify_checksums=false, fill_cache=true))]
    fn get(
        &self,
        py: Python<'_>,
        key: &[u8],
        default: Option<Py<PyAny>>,
        verify_checksums: bool,
        fill_cache: bool,
    ) -> PyResult<Py<PyAny>> {
        let read = plyvel_read(verify_checksums, fill_cache);
        get(py, &self.store, key, default, None, read)
    }

    /// Set `key` to `value` (`bytes` or any buffer). With `sync`, durable on return.
    #[pyo3(signature = (key, value, *, sync=false))]
    fn put(
        &self,
        py: Python<'_>,
        key: &[u8],
        value: &Bound<'_, PyAny>,
        sync: bool,
    ) -> PyResult<()> {
        put(py, &self.store, key, value, sync)
    }

    /// Delete `key` (nothing happens if it is absent).
    #[pyo3(signature = (key, *, sync=false))]
    fn delete(&self, py: Python<'_>, key: &[u8], sync: bool) -> PyResult<()> {
        delete(py, &self.store, key, sync)
    }

    /// Delete every key `k` with `start <= k < stop`: `stop` is excluded, as in
    /// `iterator(start=, stop=)`. One range tombstone is written however many keys the
    /// range holds (the engine's `Db::delete_range`, RocksDB's `DeleteRange`); snapshots
    /// and iterators made before it still see the keys. `start == stop` deletes nothing;
    /// `start > stop` raises `InvalidArgumentError`; a design without key order
    /// (`lsm-trie`) raises `UnsupportedError`. plyvel has none.
    #[pyo3(signature = (start, stop, *, sync=false))]
    fn delete_range(&self, py: Python<'_>, start: &[u8], stop: &[u8], sync: bool) -> PyResult<()> {
        delete_range(py, &self.store, start, stop, sync)
    }

    /// A batch of puts and deletes applied atomically by `write()`, or on leaving a `with`
    /// block (with `transaction=True`, not if the block raised).
    #[pyo3(signature = (*, transaction=false, sync=false))]
    fn write_batch(&self, transaction: bool, sync: bool) -> PyResult<WriteBatch> {
        self.store.check_open()?;
        Ok(WriteBatch::new(&self.store, None, transaction, sync))
    }

    fn __iter__(&self, py: Python<'_>) -> PyResult<RangeIterator> {
        RangeIterator::open(py, &self.store, None, RangeArgs::all(), None)
    }

    /// An iterator over `[start, stop)` (`include_start` and `include_stop` change the
    /// ends), or over the keys starting with `prefix`, in key order or `reverse`d. It yields
    /// `(key, value)` pairs, or keys or values alone.
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
        RangeIterator::open(py, &self.store, None, args, None)
    }

    /// A cursor over the whole store with `seek`, `next`, `prev`, `key` and `value`.
    #[pyo3(signature = (*, verify_checksums=false, fill_cache=true))]
    fn raw_iterator(
        &self,
        py: Python<'_>,
        verify_checksums: bool,
        fill_cache: bool,
    ) -> PyResult<RawIterator> {
        RawIterator::open(
            py,
            &self.store,
            None,
            plyvel_read(verify_checksums, fill_cache),
        )
    }

    /// A consistent point-in-time view, released by `close()` (or a `with` block, or when
    /// garbage-collected).
    fn snapshot(&self, py: Python<'_>) -> PyResult<Snapshot> {
        Snapshot::open(py, &self.store, None)
    }

    /// A named property as bytes, or `None` for an unknown name. Shale's names start with
    /// `shale.` (`shale.stats`, `shale.levels`, `shale.num-files-at-level<N>`,
    /// `shale.design`, ...); plyvel's `leveldb.stats`, `leveldb.num-files-at-level<N>` and
    /// `leveldb.approximate-memory-usage` are answered too.
    fn get_property<'py>(
        &self,
        py: Python<'py>,
        name: &[u8],
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let Ok(name) = std::str::from_utf8(name) else {
            self.store.check_open()?;
            return Ok(None);
        };
        let v = self.store.run(py, |db| Ok(property(db, name)))?;
        Ok(v.map(|v| PyBytes::new(py, v.as_bytes())))
    }

    /// Compact every table overlapping `[start, stop]` (open ends: everything) down the
    /// tree.
    #[pyo3(signature = (*, start=None, stop=None))]
    fn compact_range(
        &self,
        py: Python<'_>,
        start: Option<&[u8]>,
        stop: Option<&[u8]>,
    ) -> PyResult<()> {
        self.store.run(py, |db| Ok(db.compact_range(start, stop)?))
    }

    /// On a store opened with `secondary=True`: move the view forward to what the writer
    /// has committed and logged now (`Db::try_catch_up`). Returns the sequence number the
    /// store reads at afterwards. Iterators and snapshots taken before keep their view. On a
    /// store opened otherwise, raises `InvalidArgumentError` (a `ValueError`).
    fn try_catch_up(&self, py: Python<'_>) -> PyResult<u64> {
        self.store.run(py, |db| Ok(db.try_catch_up()?))
    }

    /// About how many table bytes `[start, stop)` takes; see `approximate_sizes`.
    fn approximate_size(&self, py: Python<'_>, start: &[u8], stop: &[u8]) -> PyResult<u64> {
        let r = PyTuple::new(py, [(PyBytes::new(py, start), PyBytes::new(py, stop))])?;
        Ok(approximate_sizes(py, &self.store, &r)?
            .first()
            .copied()
            .unwrap_or(0))
    }

    /// For each `(start, stop)` range, about how many bytes of table files hold the keys in
    /// `[start, stop)`: as LevelDB's, an estimate from the tables' indexes, at data-block
    /// granularity, without the writes still in memory (and, for the `wisckey` design,
    /// without the values in its value log).
    #[pyo3(signature = (*ranges))]
    fn approximate_sizes(&self, py: Python<'_>, ranges: &Bound<'_, PyTuple>) -> PyResult<Vec<u64>> {
        approximate_sizes(py, &self.store, ranges)
    }

    /// A view of the keys that start with `prefix`, with the prefix left out.
    fn prefixed_db(slf: &Bound<'_, Self>, prefix: &[u8]) -> PrefixedDB {
        PrefixedDB {
            db: slf.clone().unbind(),
            store: Arc::clone(&slf.get().store),
            prefix: prefix.to_vec(),
        }
    }

    /// Write the memtable to a table file and wait until every frozen memtable is flushed
    /// (Shale's; plyvel has none).
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        self.store.run(py, |db| Ok(db.flush()?))
    }
}

/// A view of the keys that start with `prefix` (plyvel's `PrefixedDB`): keys given to it
/// are prefixed, keys it returns are not.
#[pyclass(frozen, module = "shale")]
pub(crate) struct PrefixedDB {
    db: Py<PyDb>,
    store: Arc<Store>,
    prefix: Vec<u8>,
}

#[pymethods]
impl PrefixedDB {
    /// The `DB` this view is of.
    #[getter]
    fn db(&self, py: Python<'_>) -> Py<PyDb> {
        self.db.clone_ref(py)
    }

    /// The prefix.
    #[getter]
    fn prefix<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.prefix)
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let prefix = PyBytes::new(slf.py(), &slf.get().prefix);
        Ok(format!(
            "<shale.PrefixedDB with prefix {} at {:#x}>",
            prefix.repr()?,
            slf.as_ptr() as usize
        ))
    }

    /// As `DB.get`, for `prefix + key`.
    #[pyo3(signature = (key, default=None, *, verify_checksums=false, fill_cache=true))]
    fn get(
        &self,
        py: Python<'_>,
        key: &[u8],
        default: Option<Py<PyAny>>,
        verify_checksums: bool,
        fill_cache: bool,
    ) -> PyResult<Py<PyAny>> {
        get(
            py,
            &self.store,
            &concat(Some(&self.prefix), key),
            default,
            None,
            plyvel_read(verify_checksums, fill_cache),
        )
    }

    /// As `DB.put`, for `prefix + key`.
    #[pyo3(signature = (key, value, *, sync=false))]
    fn put(
        &self,
        py: Python<'_>,
        key: &[u8],
        value: &Bound<'_, PyAny>,
        sync: bool,
    ) -> PyResult<()> {
        put(
            py,
            &self.store,
            &concat(Some(&self.prefix), key),
            value,
            sync,
        )
    }

    /// As `DB.delete`, for `prefix + key`.
    #[pyo3(signature = (key, *, sync=false))]
    fn delete(&self, py: Python<'_>, key: &[u8], sync: bool) -> PyResult<()> {
        delete(py, &self.store, &concat(Some(&self.prefix), key), sync)
    }

    /// As `DB.delete_range`, for `[prefix + start, prefix + stop)`: keys outside the
    /// prefix are never deleted.
    #[pyo3(signature = (start, stop, *, sync=false))]
    fn delete_range(&self, py: Python<'_>, start: &[u8], stop: &[u8], sync: bool) -> PyResult<()> {
        let (start, stop) = (
            concat(Some(&self.prefix), start),
            concat(Some(&self.prefix), stop),
        );
        delete_range(py, &self.store, &start, &stop, sync)
    }

    /// As `DB.write_batch`; the batch prefixes its keys.
    #[pyo3(signature = (*, transaction=false, sync=false))]
    fn write_batch(&self, transaction: bool, sync: bool) -> PyResult<WriteBatch> {
        self.store.check_open()?;
        Ok(WriteBatch::new(
            &self.store,
            Some(self.prefix.clone()),
            transaction,
            sync,
        ))
    }

    fn __iter__(&self, py: Python<'_>) -> PyResult<RangeIterator> {
        RangeIterator::open(py, &self.store, Some(&self.prefix), RangeArgs::all(), None)
    }

    /// As `DB.iterator`, over the keys under the prefix; keys are yielded without it.
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
        RangeIterator::open(py, &self.store, Some(&self.prefix), args, None)
    }

    /// A snapshot whose `get` and `iterator` work under the prefix.
    fn snapshot(&self, py: Python<'_>) -> PyResult<Snapshot> {
        Snapshot::open(py, &self.store, Some(self.prefix.clone()))
    }

    /// A view of the keys under `self.prefix + prefix`.
    fn prefixed_db(&self, py: Python<'_>, prefix: &[u8]) -> PrefixedDB {
        PrefixedDB {
            db: self.db.clone_ref(py),
            store: Arc::clone(&self.store),
            prefix: concat(Some(&self.prefix), prefix),
        }
    }
}
