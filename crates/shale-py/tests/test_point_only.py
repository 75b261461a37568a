"""Designs that answer point operations only (lsm-trie): puts, gets, deletes, batches and
snapshots work; iterators raise UnsupportedError instead of returning wrong data."""

import pytest

import shale
from conftest import POINT_ONLY_DESIGNS


@pytest.fixture(params=POINT_ONLY_DESIGNS)
def point_db(request, path):
    d = shale.DB(path, create_if_missing=True, design=request.param, write_buffer_size=64 * 1024)
    yield d
    d.close()


def test_some_design_is_point_only():
    assert "lsm-trie" in POINT_ONLY_DESIGNS
    assert "lsm-trie" not in shale.scan_designs()


def test_points_batches_and_snapshots(point_db):
    for i in range(2000):
        point_db.put(b"k%04d" % i, b"v%04d" % i)
    snap = point_db.snapshot()
    with point_db.write_batch() as wb:
        wb.delete(b"k0001")
        wb.put(b"k0002", b"changed")
    assert point_db.get(b"k0001") is None
    assert point_db.get(b"k0002") == b"changed"
    assert point_db.get(b"k1999") == b"v1999"
    assert snap.get(b"k0001") == b"v0001"
    assert snap.get(b"k0002") == b"v0002"


def test_iterators_are_unsupported(point_db):
    point_db.put(b"a", b"1")
    with pytest.raises(shale.UnsupportedError):
        list(point_db.iterator())
    with pytest.raises(shale.UnsupportedError):
        list(point_db)
