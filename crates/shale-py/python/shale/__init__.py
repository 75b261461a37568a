"""Shale: an embedded, persistent, ordered key-value store whose parts are swappable
research designs (LevelDB, PebblesDB, WiscKey), with plyvel's API.

>>> import shale
>>> db = shale.DB("/tmp/example", create_if_missing=True, design="leveldb")
>>> db.put(b"apple", b"red")
>>> db.get(b"apple")
b'red'
>>> db.close()

Code written for plyvel 1.5 runs unchanged for the features both have; ``docs/python.md``
in the repository lists the differences.
"""

from ._errors import (
    CorruptionError,
    Error,
    InvalidArgumentError,
    IOError,
    IteratorInvalidError,
    LockedError,
    ReadOnlyError,
    Unsupported,
    UnsupportedError,
)
from ._shale import (
    DB,
    Iterator,
    PrefixedDB,
    RawIterator,
    Snapshot,
    WriteBatch,
    __version__,
    available_designs,
    destroy_db,
    scan_designs,
    repair_db,
)

__all__ = [
    "DB",
    "PrefixedDB",
    "Snapshot",
    "WriteBatch",
    "Iterator",
    "RawIterator",
    "available_designs",
    "scan_designs",
    "destroy_db",
    "repair_db",
    "Error",
    "IOError",
    "LockedError",
    "CorruptionError",
    "InvalidArgumentError",
    "UnsupportedError",
    "Unsupported",
    "ReadOnlyError",
    "IteratorInvalidError",
    "__version__",
]
