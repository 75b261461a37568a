"""Type stubs of the native module; ``shale`` re-exports everything here."""

import os
from typing import Any, Dict, Iterator as _Iter, List, Optional, Tuple, TypeVar, Union, final, overload

_Name = Union[str, bytes, "os.PathLike[str]"]
_Value = Union[bytes, bytearray, memoryview]
_T = TypeVar("_T")
_Item = Union[Tuple[bytes, bytes], bytes, None]

__all__ = [
    "__version__",
    "DB",
    "PrefixedDB",
    "WriteBatch",
    "Snapshot",
    "Iterator",
    "RawIterator",
    "available_designs",
    "scan_designs",
    "destroy_db",
    "repair_db",
]
__version__: str

def available_designs() -> List[str]:
    """The designs (``design=`` names) this build can open."""

def scan_designs() -> List[str]:
    """The designs among ``available_designs()`` whose stores answer iterators."""

def destroy_db(name: _Name) -> None:
    """Delete the store in directory ``name`` (its files, then the directory if empty)."""

def repair_db(name: _Name, *, design: Optional[str] = None, **options: Any) -> Dict[str, Any]:
    """Repair the store in directory ``name`` as LevelDB's ``RepairDB`` does: rebuild its
    MANIFEST and CURRENT from its files, keeping every table and log record that reads.
    Damaged tables, and files of another store, are moved into ``name/lost/`` (never
    deleted). ``design`` is used only when no MANIFEST of the store reads. Returns the
    report: ``tables``, ``entries``, ``bytes``, ``last_sequence``, ``manifest``,
    ``tables_kept``, ``tables_from_logs``, ``tables_merged``, ``set_aside`` (dicts with
    ``name``, ``moved_to``, ``reason``, ``entries``, ``smallest``, ``largest``), ``logs``
    (dicts with ``name``, ``entries``, ``skipped``, ``bytes_dropped``, ``damage``),
    ``archived`` (``(name, moved_to)`` pairs) and ``notes``. plyvel's other keyword options
    are accepted and unused."""

@final
class DB:
    """An open store (plyvel's ``DB``)."""

    def __new__(
        cls,
        name: _Name,
        *,
        create_if_missing: bool = False,
        error_if_exists: bool = False,
        paranoid_checks: Optional[bool] = None,
        write_buffer_size: Optional[int] = None,
        max_open_files: Optional[int] = None,
        lru_cache_size: Optional[int] = None,
        block_size: Optional[int] = None,
        block_restart_interval: Optional[int] = None,
        max_file_size: Optional[int] = None,
        compression: Union[str, bytes, None] = None,
        bloom_filter_bits: Optional[int] = None,
        comparator: Optional[Any] = None,
        comparator_name: Optional[bytes] = None,
        design: Union[str, bytes, None] = None,
        settings: Union[str, bytes, None] = None,
        layout: Union[str, bytes, None] = None,
        values: Union[str, bytes, None] = None,
        memory: Union[str, bytes, None] = None,
        min_separated_value_size: Optional[int] = None,
        vlog_memtable_value_max: Optional[int] = None,
        max_background_compactions: Optional[int] = None,
        mmap_reads: Optional[bool] = None,
        mmap_log_writes: Optional[bool] = None,
        memtable_bloom_ratio: Optional[float] = None,
        min_memtables_to_merge: Optional[int] = None,
        read_only: bool = False,
        secondary: bool = False,
    ) -> "DB": ...
    @property
    def name(self) -> _Name: ...
    @property
    def closed(self) -> bool: ...
    def close(self) -> None: ...
    def __enter__(self) -> "DB": ...
    def __exit__(self, *args: Any) -> bool: ...
    @overload
    def get(
        self, key: bytes, *, verify_checksums: bool = False, fill_cache: bool = True
    ) -> Optional[bytes]: ...
    @overload
    def get(
        self, key: bytes, default: _T, *, verify_checksums: bool = False, fill_cache: bool = True
    ) -> Union[bytes, _T]: ...
    def put(self, key: bytes, value: _Value, *, sync: bool = False) -> None: ...
    def delete(self, key: bytes, *, sync: bool = False) -> None: ...
    def delete_range(self, start: bytes, stop: bytes, *, sync: bool = False) -> None:
        """Delete every key ``k`` with ``start <= k < stop`` (``stop`` excluded) with one
        range tombstone (Shale's; plyvel has none). ``UnsupportedError`` on ``lsm-trie``."""
    def write_batch(self, *, transaction: bool = False, sync: bool = False) -> "WriteBatch": ...
    def __iter__(self) -> "Iterator": ...
    def iterator(
        self,
        *,
        reverse: bool = False,
        start: Optional[bytes] = None,
        stop: Optional[bytes] = None,
        include_start: bool = True,
        include_stop: bool = False,
        prefix: Optional[bytes] = None,
        include_key: bool = True,
        include_value: bool = True,
        verify_checksums: bool = False,
        fill_cache: bool = True,
    ) -> "Iterator": ...
    def raw_iterator(
        self, *, verify_checksums: bool = False, fill_cache: bool = True
    ) -> "RawIterator": ...
    def snapshot(self) -> "Snapshot": ...
    def get_property(self, name: bytes) -> Optional[bytes]: ...
    def compact_range(self, *, start: Optional[bytes] = None, stop: Optional[bytes] = None) -> None: ...
    def try_catch_up(self) -> int:
        """On a store opened with ``secondary=True``: see what the writer has committed and
        logged since; returns the sequence number read at. Earlier snapshots and iterators
        keep their view. ``InvalidArgumentError`` on any other store."""
    def approximate_size(self, start: bytes, stop: bytes) -> int: ...
    def approximate_sizes(self, *ranges: Tuple[bytes, bytes]) -> List[int]: ...
    def prefixed_db(self, prefix: bytes) -> "PrefixedDB": ...
    def flush(self) -> None:
        """Write the memtable to a table file (Shale's; plyvel has none)."""

@final
class PrefixedDB:
    """A view of the keys that start with ``prefix`` (plyvel's ``PrefixedDB``)."""

    @property
    def db(self) -> DB: ...
    @property
    def prefix(self) -> bytes: ...
    @overload
    def get(
        self, key: bytes, *, verify_checksums: bool = False, fill_cache: bool = True
    ) -> Optional[bytes]: ...
    @overload
    def get(
        self, key: bytes, default: _T, *, verify_checksums: bool = False, fill_cache: bool = True
    ) -> Union[bytes, _T]: ...
    def put(self, key: bytes, value: _Value, *, sync: bool = False) -> None: ...
    def delete(self, key: bytes, *, sync: bool = False) -> None: ...
    def delete_range(self, start: bytes, stop: bytes, *, sync: bool = False) -> None:
        """Delete every key ``k`` with ``start <= k < stop`` (``stop`` excluded) with one
        range tombstone (Shale's; plyvel has none). ``UnsupportedError`` on ``lsm-trie``."""
    def write_batch(self, *, transaction: bool = False, sync: bool = False) -> "WriteBatch": ...
    def __iter__(self) -> "Iterator": ...
    def iterator(
        self,
        *,
        reverse: bool = False,
        start: Optional[bytes] = None,
        stop: Optional[bytes] = None,
        include_start: bool = True,
        include_stop: bool = False,
        prefix: Optional[bytes] = None,
        include_key: bool = True,
        include_value: bool = True,
        verify_checksums: bool = False,
        fill_cache: bool = True,
    ) -> "Iterator": ...
    def snapshot(self) -> "Snapshot": ...
    def prefixed_db(self, prefix: bytes) -> "PrefixedDB": ...

@final
class WriteBatch:
    """Puts and deletes applied atomically (plyvel's ``WriteBatch``)."""

    def put(self, key: bytes, value: _Value) -> None: ...
    def delete(self, key: bytes) -> None: ...
    def delete_range(self, start: bytes, stop: bytes) -> None:
        """Add a delete of every key in ``[start, stop)`` (``stop`` excluded)."""
    def clear(self) -> None: ...
    def write(self) -> None: ...
    def approximate_size(self) -> int: ...
    def append(self, source: "WriteBatch") -> None: ...
    def __enter__(self) -> "WriteBatch": ...
    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None: ...

@final
class Snapshot:
    """A consistent point-in-time view (plyvel's ``Snapshot``)."""

    @overload
    def get(
        self, key: bytes, *, verify_checksums: bool = False, fill_cache: bool = True
    ) -> Optional[bytes]: ...
    @overload
    def get(
        self, key: bytes, default: _T, *, verify_checksums: bool = False, fill_cache: bool = True
    ) -> Union[bytes, _T]: ...
    def __iter__(self) -> "Iterator": ...
    def iterator(
        self,
        *,
        reverse: bool = False,
        start: Optional[bytes] = None,
        stop: Optional[bytes] = None,
        include_start: bool = True,
        include_stop: bool = False,
        prefix: Optional[bytes] = None,
        include_key: bool = True,
        include_value: bool = True,
        verify_checksums: bool = False,
        fill_cache: bool = True,
    ) -> "Iterator": ...
    def raw_iterator(
        self, *, verify_checksums: bool = False, fill_cache: bool = True
    ) -> "RawIterator": ...
    def close(self) -> None: ...
    def release(self) -> None: ...
    def __enter__(self) -> "Snapshot": ...
    def __exit__(self, *args: Any) -> bool: ...

@final
class Iterator(_Iter[_Item]):
    """A range iterator (plyvel's ``Iterator``): yields ``(key, value)`` pairs, or keys or
    values alone (``include_key``, ``include_value``)."""

    def __iter__(self) -> "Iterator": ...
    def __next__(self) -> _Item: ...
    def prev(self) -> _Item: ...
    def seek_to_start(self) -> None: ...
    def seek_to_stop(self) -> None: ...
    def seek(self, target: bytes) -> None: ...
    def close(self) -> None: ...
    def __enter__(self) -> "Iterator": ...
    def __exit__(self, *args: Any) -> bool: ...

@final
class RawIterator:
    """A cursor on one entry (plyvel's ``RawIterator``)."""

    def valid(self) -> bool: ...
    def seek_to_first(self) -> None: ...
    def seek_to_last(self) -> None: ...
    def seek(self, target: bytes) -> None: ...
    def next(self) -> None: ...
    def prev(self) -> None: ...
    def key(self) -> bytes: ...
    def value(self) -> bytes: ...
    def item(self) -> Tuple[bytes, bytes]: ...
    def close(self) -> None: ...
    def __enter__(self) -> "RawIterator": ...
    def __exit__(self, *args: Any) -> bool: ...
