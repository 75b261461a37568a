"""WriteBatch, Snapshot and PrefixedDB."""

import pytest

import shale
from conftest import fill


class TestWriteBatch:
    def test_context_manager_writes(self, db):
        with db.write_batch() as wb:
            wb.put(b"a", b"1")
            wb.put(b"b", b"2")
            wb.delete(b"a")
            assert db.get(b"b") is None  # nothing applied before the block ends
        assert db.get(b"a") is None and db.get(b"b") == b"2"

    def test_non_transaction_writes_on_error(self, db):
        with pytest.raises(ZeroDivisionError):
            with db.write_batch() as wb:
                wb.put(b"a", b"1")
                1 / 0
        assert db.get(b"a") == b"1"

    def test_transaction_discards_on_error(self, db):
        with pytest.raises(ZeroDivisionError):
            with db.write_batch(transaction=True) as wb:
                wb.put(b"a", b"1")
                1 / 0
        assert db.get(b"a") is None
        with db.write_batch(transaction=True, sync=True) as wb:
            wb.put(b"a", b"2")
        assert db.get(b"a") == b"2"

    def test_write_keeps_contents(self, db):
        wb = db.write_batch()
        wb.put(b"a", b"1")
        wb.write()
        db.delete(b"a")
        wb.write()
        assert db.get(b"a") == b"1"
        wb.clear()
        db.delete(b"a")
        wb.write()
        assert db.get(b"a") is None

    def test_size_and_append(self, db):
        a, b = db.write_batch(), db.write_batch()
        empty = a.approximate_size()
        a.put(b"x", b"1")
        assert a.approximate_size() > empty
        b.put(b"y", b"2")
        b.delete(b"x")
        a.append(b)
        a.append(a)
        a.write()
        assert db.get(b"x") is None and db.get(b"y") == b"2"

    def test_large_batch(self, db):
        with db.write_batch() as wb:
            for i in range(5000):
                wb.put(b"k%05d" % i, b"v" * 50)
        assert len(list(db.iterator(include_value=False))) == 5000

    def test_bad_arguments(self, db):
        wb = db.write_batch()
        with pytest.raises(TypeError):
            wb.put("a", b"1")
        with pytest.raises(TypeError):
            wb.put(b"a", None)
        with pytest.raises(TypeError):
            wb.delete(1)
        with pytest.raises(TypeError):
            wb.append(object())

    def test_buffer_values(self, db):
        with db.write_batch() as wb:
            wb.put(b"a", bytearray(b"xy"))
        assert db.get(b"a") == b"xy"


class TestSnapshot:
    def test_reads_the_past(self, db):
        model = fill(db, 500)
        snap = db.snapshot()
        for i in range(0, 500, 3):
            db.delete(b"k%04d" % i)
        db.put(b"k0001", b"changed")
        db.put(b"new", b"x")
        db.flush()
        db.compact_range()
        assert snap.get(b"k0001") == b"v0001"
        assert snap.get(b"k0000") == b"v0000"
        assert snap.get(b"new") is None
        assert snap.get(b"new", b"d") == b"d"
        assert dict(snap) == model
        assert list(snap.iterator(start=b"k0100", stop=b"k0103", include_value=False)) == [
            b"k0100",
            b"k0101",
            b"k0102",
        ]
        it = snap.raw_iterator()
        it.seek(b"k0000")
        assert it.value() == b"v0000"
        assert db.get(b"k0000") is None

    def test_close_release_and_with(self, db):
        db.put(b"a", b"1")
        with db.snapshot() as snap:
            assert snap.get(b"a") == b"1"
        for op in (lambda: snap.get(b"a"), snap.iterator, snap.raw_iterator, lambda: list(snap)):
            with pytest.raises(RuntimeError):
                op()
        s2 = db.snapshot()
        s2.release()
        s2.close()
        with pytest.raises(RuntimeError):
            s2.get(b"a")

    def test_iterator_outlives_snapshot_close(self, db):
        db.put(b"a", b"1")
        snap = db.snapshot()
        it = snap.iterator()
        db.put(b"b", b"2")
        snap.close()
        assert list(it) == [(b"a", b"1")]

    def test_keeps_store_alive(self, path):
        db = shale.DB(path, create_if_missing=True)
        db.put(b"a", b"1")
        snap = db.snapshot()
        del db
        assert snap.get(b"a") == b"1"


class TestPrefixedDB:
    def test_basic(self, db):
        db.put(b"a-1", b"x")
        p = db.prefixed_db(b"p-")
        assert p.prefix == b"p-" and p.db is db
        assert "p-" in repr(p)
        p.put(b"1", b"one")
        p.put(b"2", b"two")
        assert db.get(b"p-1") == b"one"
        assert p.get(b"1") == b"one" and p.get(b"3") is None and p.get(b"3", 0) == 0
        p.delete(b"2")
        assert db.get(b"p-2") is None
        assert list(p) == [(b"1", b"one")]

    def test_iterator(self, db):
        for k in (b"a", b"p", b"pa", b"pb", b"pc", b"q"):
            db.put(k, k)
        p = db.prefixed_db(b"p")
        assert list(p.iterator(include_value=False)) == [b"", b"a", b"b", b"c"]
        assert list(p.iterator(reverse=True, include_value=False)) == [b"c", b"b", b"a", b""]
        assert list(p.iterator(start=b"a", stop=b"c", include_value=False)) == [b"a", b"b"]
        assert list(p.iterator(start=b"a", stop=b"c", include_stop=True, include_start=False,
                               include_value=False)) == [b"b", b"c"]
        assert list(p.iterator(prefix=b"b")) == [(b"b", b"pb")]
        it = p.iterator(include_value=False)
        it.seek(b"b")
        assert next(it) == b"b"

    def test_all_ff_prefix(self, db):
        db.put(b"\xff\xffa", b"1")
        db.put(b"\xfe", b"0")
        p = db.prefixed_db(b"\xff\xff")
        assert list(p) == [(b"a", b"1")]

    def test_batch_snapshot_nested(self, db):
        p = db.prefixed_db(b"p-")
        with p.write_batch() as wb:
            wb.put(b"a", b"1")
            wb.delete(b"b")
        assert db.get(b"p-a") == b"1"
        snap = p.snapshot()
        p.put(b"a", b"2")
        assert snap.get(b"a") == b"1"
        assert list(snap) == [(b"a", b"1")]
        assert list(snap.iterator(include_key=False)) == [b"1"]
        q = p.prefixed_db(b"q-")
        q.put(b"x", b"y")
        assert db.get(b"p-q-x") == b"y"
        assert q.prefix == b"p-q-"

    def test_bad_arguments(self, db):
        with pytest.raises(TypeError):
            db.prefixed_db("p")
        p = db.prefixed_db(b"p")
        with pytest.raises(TypeError):
            p.get("a")
