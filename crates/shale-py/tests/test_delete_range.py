"""delete_range(start, stop): the engine's range tombstones (Db::delete_range) on DB,
WriteBatch and PrefixedDB. stop is excluded, as in iterator(start=, stop=)."""

import random

import pytest

import shale
from conftest import POINT_ONLY_DESIGNS, fill


def test_deletes_start_up_to_stop(db):
    model = fill(db, 500)
    snap = db.snapshot()
    it = db.iterator()
    db.delete_range(b"k0100", b"k0200")
    assert db.get(b"k0099") == b"v0099"
    assert db.get(b"k0100") is None
    assert db.get(b"k0150") is None
    assert db.get(b"k0199") is None
    assert db.get(b"k0200") == b"v0200"  # stop is excluded
    keys = list(db.iterator(include_value=False))
    assert len(keys) == 400 and b"k0100" not in keys and b"k0200" in keys
    assert list(db.iterator(reverse=True, start=b"k0050", stop=b"k0250", include_value=False)) == [
        b"k%04d" % i for i in reversed(list(range(50, 100)) + list(range(200, 250)))
    ]
    # Earlier snapshots and iterators still see the keys.
    assert snap.get(b"k0150") == b"v0150"
    assert dict(snap.iterator()) == model
    assert dict(it) == model
    # A later put inside the range is newer than the tombstone.
    db.put(b"k0150", b"again")
    assert db.get(b"k0150") == b"again"
    db.compact_range()
    assert db.get(b"k0150") == b"again" and db.get(b"k0151") is None
    assert snap.get(b"k0151") == b"v0151"
    assert len(list(db.iterator())) == 401
    snap.close()


def test_survives_reopen_and_compaction(path, design):
    db = shale.DB(path, create_if_missing=True, design=design, write_buffer_size=64 * 1024)
    fill(db, 1000)
    db.delete_range(b"k0300", b"k0700", sync=True)
    db.close()
    db = shale.DB(path)
    assert db.get(b"k0300") is None and db.get(b"k0700") == b"v0700"
    db.compact_range()
    db.close()
    db = shale.DB(path)
    assert [k for k in db.iterator(include_value=False)] == [
        b"k%04d" % i for i in list(range(300)) + list(range(700, 1000))
    ]
    db.close()


def test_empty_and_inverted_ranges(db):
    fill(db, 10)
    db.delete_range(b"k0003", b"k0003")
    assert db.get(b"k0003") == b"v0003"
    with pytest.raises(shale.InvalidArgumentError):
        db.delete_range(b"k0005", b"k0002")
    assert len(list(db)) == 10
    # Keys are bytes; both ends are required.
    with pytest.raises(TypeError):
        db.delete_range("k0001", b"k0005")
    with pytest.raises(TypeError):
        db.delete_range(b"k0001")
    with pytest.raises(TypeError):
        db.delete_range(b"k0001", None)
    # Everything: from the empty key to one past every key.
    db.delete_range(b"", b"\xff")
    assert list(db) == []


def test_in_a_write_batch(db):
    fill(db, 100)
    with db.write_batch() as wb:
        wb.put(b"k0010", b"deleted by the range after it")
        wb.delete_range(b"k0010", b"k0020")
        wb.put(b"k0015", b"put after the range")
    assert db.get(b"k0010") is None
    assert db.get(b"k0015") == b"put after the range"
    assert db.get(b"k0019") is None and db.get(b"k0020") == b"v0020"
    # A transaction that raises writes nothing.
    with pytest.raises(ZeroDivisionError):
        with db.write_batch(transaction=True) as wb:
            wb.delete_range(b"k0050", b"k0060")
            1 / 0
    assert db.get(b"k0050") == b"v0050"
    # A bad range fails the whole batch.
    wb = db.write_batch()
    wb.delete(b"k0070")
    wb.delete_range(b"k0090", b"k0080")
    with pytest.raises(shale.InvalidArgumentError):
        wb.write()
    assert db.get(b"k0070") == b"v0070"
    # approximate_size and append count it.
    a = db.write_batch()
    size = a.approximate_size()
    a.delete_range(b"k0030", b"k0040")
    assert a.approximate_size() > size
    b = db.write_batch()
    b.append(a)
    b.write()
    assert db.get(b"k0030") is None and db.get(b"k0040") == b"v0040"


def test_prefixed(db):
    for p in (b"a/", b"b/", b"b/x/"):
        for i in range(20):
            db.put(p + b"%02d" % i, b"v")
    pdb = db.prefixed_db(b"b/")
    pdb.delete_range(b"05", b"10")
    assert [k for k in pdb.iterator(include_value=False) if not k.startswith(b"x/")] == [
        b"%02d" % i for i in list(range(5)) + list(range(10, 20))
    ]
    # The whole prefix: b"" up to b"\xff" (keys under the prefix starting with 0xff stay).
    pdb.prefixed_db(b"x/").delete_range(b"", b"\xff")
    assert db.get(b"b/x/00") is None
    with pdb.write_batch() as wb:
        wb.delete_range(b"00", b"03")
    assert pdb.get(b"02") is None and pdb.get(b"03") == b"v"
    assert db.get(b"a/02") == b"v"
    assert len(list(db.iterator(prefix=b"a/"))) == 20
    assert len(list(db.iterator(prefix=b"b/"))) == 12


@pytest.mark.parametrize("point_design", POINT_ONLY_DESIGNS)
def test_unsupported_without_key_order(path, point_design):
    db = shale.DB(path, create_if_missing=True, design=point_design)
    db.put(b"a", b"1")
    with pytest.raises(shale.Unsupported, match="delete_range"):
        db.delete_range(b"a", b"b")
    wb = db.write_batch()
    wb.put(b"c", b"3")
    wb.delete_range(b"a", b"b")
    with pytest.raises(shale.UnsupportedError):
        wb.write()
    assert db.get(b"a") == b"1" and db.get(b"c") is None
    db.close()


def test_after_close_and_read_only(path):
    db = shale.DB(path, create_if_missing=True)
    db.put(b"a", b"1")
    r = shale.DB(path, read_only=True)
    with pytest.raises(shale.ReadOnlyError):
        r.delete_range(b"a", b"b")
    r.close()
    wb = db.write_batch()
    db.close()
    with pytest.raises(RuntimeError):
        db.delete_range(b"a", b"b")
    with pytest.raises(RuntimeError):
        wb.delete_range(b"a", b"b")


def test_model(db):
    """Random puts, deletes, range deletes (on the store and in batches), flushes and
    compactions against a dict; gets and both scan directions agree after every step."""
    rng = random.Random(18)
    model = {}

    def key():
        return b"%03d" % rng.randrange(200)

    for step in range(600):
        op = rng.random()
        if op < 0.55:
            k, v = key(), b"%d" % step
            db.put(k, v)
            model[k] = v
        elif op < 0.7:
            k = key()
            db.delete(k)
            model.pop(k, None)
        elif op < 0.85:
            a, b = sorted((key(), key()))
            db.delete_range(a, b)
            for k in [k for k in model if a <= k < b]:
                del model[k]
        elif op < 0.95:
            with db.write_batch() as wb:
                for _ in range(3):
                    if rng.random() < 0.5:
                        a, b = sorted((key(), key()))
                        wb.delete_range(a, b)
                        for k in [k for k in model if a <= k < b]:
                            del model[k]
                    else:
                        k, v = key(), b"b%d" % step
                        wb.put(k, v)
                        model[k] = v
        elif op < 0.98:
            db.flush()
        else:
            db.compact_range()
        if step % 50 == 0 or step == 599:
            assert list(db.iterator()) == sorted(model.items())
            assert list(db.iterator(reverse=True)) == sorted(model.items(), reverse=True)
        k = key()
        assert db.get(k) == model.get(k)
