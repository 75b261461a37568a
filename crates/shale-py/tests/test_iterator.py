"""Iterator (plyvel's range iterator) and RawIterator."""

import itertools

import pytest

import shale
from conftest import fill

KEYS = [b"a", b"b", b"ba", b"bb", b"c", b"d\x00", b"d\xff", b"e"]


@pytest.fixture
def kdb(db):
    for k in KEYS:
        db.put(k, k.upper())
    return db


def model_range(start, stop, include_start, include_stop, prefix):
    out = []
    for k in KEYS:
        if prefix is not None:
            if not k.startswith(prefix):
                continue
        else:
            if start is not None and (k < start or (k == start and not include_start)):
                continue
            if stop is not None and (k > stop or (k == stop and not include_stop)):
                continue
        out.append(k)
    return out


BOUNDS = [None, b"", b"a", b"b", b"bb", b"bc", b"d\xff", b"e", b"f"]


def test_ranges_match_model(kdb):
    for start, stop in itertools.product(BOUNDS, BOUNDS):
        for include_start, include_stop, reverse in itertools.product([True, False], repeat=3):
            expected = model_range(start, stop, include_start, include_stop, None)
            if reverse:
                expected = expected[::-1]
            got = list(
                kdb.iterator(
                    start=start,
                    stop=stop,
                    include_start=include_start,
                    include_stop=include_stop,
                    reverse=reverse,
                    include_value=False,
                )
            )
            assert got == expected, (start, stop, include_start, include_stop, reverse)


@pytest.mark.parametrize("prefix", [b"", b"b", b"ba", b"d", b"d\xff", b"x"])
def test_prefix(kdb, prefix):
    expected = model_range(None, None, True, False, prefix)
    assert list(kdb.iterator(prefix=prefix, include_value=False)) == expected
    assert list(kdb.iterator(prefix=prefix, include_value=False, reverse=True)) == expected[::-1]


def test_prefix_with_start_or_stop_is_a_type_error(kdb):
    with pytest.raises(TypeError):
        kdb.iterator(prefix=b"b", start=b"a")
    with pytest.raises(TypeError):
        kdb.iterator(prefix=b"b", stop=b"c")


def test_include_key_and_value(kdb):
    assert next(kdb.iterator()) == (b"a", b"A")
    assert next(kdb.iterator(include_value=False)) == b"a"
    assert next(kdb.iterator(include_key=False)) == b"A"
    assert next(kdb.iterator(include_key=False, include_value=False)) is None


def test_db_is_iterable(kdb):
    assert [k for k, _ in kdb] == KEYS


def test_prev_and_next(kdb):
    it = kdb.iterator(include_value=False)
    with pytest.raises(StopIteration):
        it.prev()
    assert next(it) == b"a"
    assert next(it) == b"b"
    assert it.prev() == b"b"
    assert it.prev() == b"a"
    with pytest.raises(StopIteration):
        it.prev()
    assert next(it) == b"a"
    assert list(it) == KEYS[1:]
    with pytest.raises(StopIteration):
        next(it)
    assert it.prev() == b"e"


def test_reverse_prev(kdb):
    it = kdb.iterator(include_value=False, reverse=True)
    assert next(it) == b"e"
    assert next(it) == b"d\xff"
    assert it.prev() == b"d\xff"
    assert it.prev() == b"e"
    with pytest.raises(StopIteration):
        it.prev()


def test_seek(kdb):
    it = kdb.iterator(include_value=False)
    it.seek(b"bb")
    assert next(it) == b"bb"
    it.seek(b"bc")
    assert next(it) == b"c"
    it.seek(b"bc")
    assert it.prev() == b"bb"
    it.seek(b"zzz")
    with pytest.raises(StopIteration):
        next(it)
    assert it.prev() == b"e"
    it.seek_to_start()
    assert next(it) == b"a"
    it.seek_to_stop()
    assert it.prev() == b"e"
    with pytest.raises(TypeError):
        it.seek("a")


def test_seek_clamps_to_range(kdb):
    it = kdb.iterator(start=b"b", stop=b"d", include_value=False)
    it.seek(b"a")
    assert next(it) == b"b"
    it.seek(b"x")
    with pytest.raises(StopIteration):
        next(it)
    assert it.prev() == b"c"


def test_reverse_seek(kdb):
    it = kdb.iterator(include_value=False, reverse=True)
    it.seek(b"bb")
    # A reverse iterator's next() is a step back in key order.
    assert next(it) == b"ba"
    it.seek(b"bb")
    assert it.prev() == b"bb"
    it.seek_to_stop()
    assert next(it) == b"e"
    it.seek_to_start()
    with pytest.raises(StopIteration):
        next(it)


def test_iterator_is_a_point_in_time(db):
    fill(db, 100)
    it = db.iterator(include_value=False)
    db.put(b"k0050x", b"new")
    db.delete(b"k0010")
    keys = list(it)
    assert len(keys) == 100 and b"k0010" in keys and b"k0050x" not in keys


def test_iterates_over_tables_and_memtable(db):
    model = fill(db, 2000)
    db.flush()
    for i in range(0, 2000, 7):
        k = b"k%04d" % i
        db.delete(k)
        del model[k]
    db.put(b"k0003", b"over")
    model[b"k0003"] = b"over"
    assert list(db) == sorted(model.items())
    assert list(db.iterator(reverse=True)) == sorted(model.items(), reverse=True)


def test_iterator_close_and_context_manager(kdb):
    with kdb.iterator() as it:
        assert next(it) == (b"a", b"A")
    with pytest.raises(RuntimeError):
        next(it)
    it = kdb.iterator()
    it.close()
    it.close()
    for op in (lambda: next(it), it.prev, it.seek_to_start, it.seek_to_stop, lambda: it.seek(b"a")):
        with pytest.raises(RuntimeError):
            op()


def test_iterator_keeps_store_alive(path):
    db = shale.DB(path, create_if_missing=True)
    db.put(b"a", b"1")
    db.put(b"b", b"2")
    it = db.iterator()
    del db
    assert list(it) == [(b"a", b"1"), (b"b", b"2")]
    # Still open while the iterator lives: a second open is locked out.
    with pytest.raises(shale.LockedError):
        shale.DB(path)
    del it
    shale.DB(path).close()


class TestRawIterator:
    def test_walk(self, kdb):
        it = kdb.raw_iterator()
        assert not it.valid()
        it.seek_to_first()
        seen = []
        while it.valid():
            seen.append(it.key())
            assert it.value() == it.key().upper()
            assert it.item() == (it.key(), it.value())
            it.next()
        assert seen == KEYS
        it.seek_to_last()
        back = []
        while it.valid():
            back.append(it.key())
            it.prev()
        assert back == KEYS[::-1]

    def test_seek(self, kdb):
        it = kdb.raw_iterator()
        it.seek(b"bc")
        assert it.key() == b"c"
        it.seek(b"zz")
        assert not it.valid()

    def test_invalid(self, kdb):
        it = kdb.raw_iterator()
        for op in (it.next, it.prev, it.key, it.value, it.item):
            with pytest.raises(shale.IteratorInvalidError):
                op()
        assert issubclass(shale.IteratorInvalidError, shale.Error)

    def test_close(self, kdb):
        with kdb.raw_iterator() as it:
            it.seek_to_first()
        for op in (it.valid, it.seek_to_first, it.seek_to_last, it.next, it.key):
            with pytest.raises(RuntimeError):
                op()

    def test_empty(self, db):
        it = db.raw_iterator()
        it.seek_to_first()
        assert not it.valid()
        it.seek_to_last()
        assert not it.valid()


class Model:
    """plyvel's range iterator as it is meant to be: a position between two entries of a
    sorted list, 0 (before the first) to len (after the last)."""

    def __init__(self, keys, reverse):
        self.keys, self.reverse = keys, reverse
        self.pos = len(keys) if reverse else 0

    def forward(self):
        if self.pos == len(self.keys):
            raise StopIteration
        self.pos += 1
        return self.keys[self.pos - 1]

    def back(self):
        if self.pos == 0:
            raise StopIteration
        self.pos -= 1
        return self.keys[self.pos]

    def next(self):
        return self.back() if self.reverse else self.forward()

    def prev(self):
        return self.forward() if self.reverse else self.back()

    def seek(self, target):
        import bisect

        self.pos = bisect.bisect_left(self.keys, target)


def outcome(f):
    try:
        return f()
    except StopIteration:
        return "stop"


@pytest.mark.parametrize("seed", range(4))
def test_random_walks_match_model(db, seed):
    # Long runs in one direction read ahead in batches; turning, seeking and closing must
    # still see exactly the model's entries.
    import random

    rng = random.Random(seed)
    model = fill(db, 3000, prefix=b"w")
    db.flush()
    for k in list(model)[::5]:
        db.put(k, b"new" + k)  # some keys in the memtable too
        model[k] = b"new" + k
    keys = sorted(model)
    for case in range(6):
        reverse = rng.random() < 0.5
        lo, hi = sorted(rng.sample(range(len(keys)), 2))
        start, stop = keys[lo], keys[hi]
        include_value = rng.random() < 0.5
        it = db.iterator(start=start, stop=stop, reverse=reverse, include_value=include_value)
        m = Model(keys[lo:hi], reverse)
        for _ in range(40):
            r = rng.random()
            if r < 0.1:
                t = b"w%04d" % rng.randrange(3000)
                it.seek(t)
                m.seek(t)
                continue
            op = "next" if r < 0.6 else "prev"
            for _ in range(rng.choice([1, 2, 3, 9, 40, 300])):
                want = outcome(getattr(m, op))
                got = outcome(it.__next__ if op == "next" else it.prev)
                if want != "stop" and include_value:
                    want = (want, model[want])
                assert got == want, (seed, case, op)
                if got == "stop":
                    break
        it.close()
        with pytest.raises(RuntimeError):
            next(it)


def test_read_ahead_sees_a_fixed_point_in_time(db):
    fill(db, 1000)
    it = db.iterator(include_value=False)
    first = [next(it) for _ in range(10)]  # a batch is read ahead by now
    for i in range(1000):
        db.delete(b"k%04d" % i)
    db.compact_range()
    rest = list(it)
    assert first + rest == [b"k%04d" % i for i in range(1000)]
    assert [it.prev() for _ in range(3)] == [b"k0999", b"k0998", b"k0997"]
