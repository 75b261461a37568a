"""Fixtures: a fresh store directory, and a store of every design this build can open.

Most tests take the ``db`` fixture and so run once per design, the same operations
against every preset (LevelDB's habit of rerunning a suite under several option sets).
"""

import pytest

import shale

# The suite reads with iterators: it runs over the designs that answer them. The others
# (lsm-trie, point operations only) are covered by test_point_only.py.
DESIGNS = shale.scan_designs()
POINT_ONLY_DESIGNS = [d for d in shale.available_designs() if d not in DESIGNS]


@pytest.fixture
def path(tmp_path):
    """A directory path for a new store (not created yet)."""
    return str(tmp_path / "store")


@pytest.fixture(params=DESIGNS)
def design(request):
    return request.param


@pytest.fixture
def db(path, design):
    """An open store of each design; closed after the test."""
    # Small memtables so that a few hundred puts reach table files.
    d = shale.DB(path, create_if_missing=True, design=design, write_buffer_size=64 * 1024)
    yield d
    d.close()


def fill(db, n, prefix=b"k"):
    """Put keys prefix + 0000..n-1 with values v0000..; return the dict written."""
    model = {}
    for i in range(n):
        k, v = b"%s%04d" % (prefix, i), b"v%04d" % i
        db.put(k, v)
        model[k] = v
    return model
