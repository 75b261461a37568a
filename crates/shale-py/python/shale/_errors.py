"""The exceptions Shale raises.

``Error``, ``IOError``, ``CorruptionError`` and ``IteratorInvalidError`` have plyvel's
names and bases, so ``except plyvel.CorruptionError`` ported to ``shale`` keeps working.
The others are subclasses that say more precisely what Shale's engine reported; each also
derives from the built-in exception a Python programmer would reach for first.
"""

from __future__ import annotations

from typing import Optional

__all__ = [
    "Error",
    "IOError",
    "LockedError",
    "CorruptionError",
    "InvalidArgumentError",
    "UnsupportedError",
    "Unsupported",
    "ReadOnlyError",
    "IteratorInvalidError",
]


class Error(Exception):
    """Base class of every error raised by the store (plyvel's ``Error``)."""


class IOError(Error, OSError):  # noqa: A001 - plyvel's name
    """The operating system failed an operation. ``errno`` is set when the OS gave one,
    ``path`` names the file or directory involved when known."""

    path: Optional[str] = None


class LockedError(IOError):
    """Another handle, in this process or another, has the store open (its ``LOCK`` file).
    ``path`` is the lock file."""


class CorruptionError(Error):
    """Bytes read from a file are not what its format requires. ``file`` and ``offset``
    name where, and the message says what was expected and what was found."""

    file: Optional[str] = None
    offset: Optional[int] = None


class InvalidArgumentError(Error, ValueError):
    """The store rejected an argument or an option (a key over 64 KiB, a missing store
    with ``create_if_missing=False``, an existing one with ``error_if_exists=True``)."""


class UnsupportedError(Error, NotImplementedError):
    """The store's design cannot do this (for example a range scan on a hash layout), or
    this build of Shale does not implement it yet (custom comparators)."""


#: The issue tracker's and the engine's name for ``UnsupportedError``.
Unsupported = UnsupportedError


class ReadOnlyError(Error):
    """The store refuses writes: it was opened with ``read_only=True`` or
    ``secondary=True``, or an earlier durable write failed (for example an fsync of the
    log), or background work did (a flush, or a compaction that found a damaged table), in
    which case it refuses them until it is reopened."""


class IteratorInvalidError(Error):
    """A raw iterator was asked for its key, value or a step while not positioned on an
    entry (plyvel's ``IteratorInvalidError``)."""
