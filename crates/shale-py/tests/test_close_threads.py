"""Use after close, and several threads on one store, one iterator, one batch."""

import threading

import pytest

import shale
from conftest import fill


def test_everything_raises_after_close(db):
    db.put(b"a", b"1")
    it = db.iterator()
    raw = db.raw_iterator()
    raw.seek_to_first()
    snap = db.snapshot()
    wb = db.write_batch()
    wb.put(b"b", b"2")
    p = db.prefixed_db(b"a")
    db.close()
    assert db.closed
    db.close()  # idempotent
    calls = [
        lambda: db.get(b"a"),
        lambda: db.put(b"a", b"1"),
        lambda: db.delete(b"a"),
        db.write_batch,
        db.iterator,
        lambda: iter(db),
        db.raw_iterator,
        db.snapshot,
        lambda: db.get_property(b"shale.stats"),
        db.compact_range,
        lambda: db.approximate_size(b"a", b"b"),
        db.flush,
        lambda: next(it),
        it.prev,
        lambda: it.seek(b"a"),
        raw.valid,
        raw.key,
        raw.next,
        lambda: snap.get(b"a"),
        snap.iterator,
        lambda: wb.put(b"c", b"3"),
        lambda: wb.delete(b"c"),
        wb.write,
        wb.clear,
        lambda: wb.__enter__(),
        lambda: p.get(b""),
        lambda: p.put(b"", b"1"),
        p.iterator,
        p.write_batch,
        p.snapshot,
    ]
    for i, call in enumerate(calls):
        with pytest.raises(RuntimeError):
            call()
            pytest.fail(f"call {i} did not raise")
    # Releasing and closing still work.
    snap.close()
    it.close()
    raw.close()


def test_batch_exit_after_close(path):
    db = shale.DB(path, create_if_missing=True)
    with pytest.raises(RuntimeError):
        with db.write_batch() as wb:
            wb.put(b"a", b"1")
            db.close()


def test_closed_store_reopens_with_data(path):
    db = shale.DB(path, create_if_missing=True)
    fill(db, 100)
    it = db.iterator()
    db.close()
    db2 = shale.DB(path)  # close() released the lock although the iterator lives
    assert len(list(db2)) == 100
    db2.close()
    with pytest.raises(RuntimeError):
        next(it)


def run_threads(n, target):
    errors = []

    def wrap(i):
        try:
            target(i)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=wrap, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
        assert not t.is_alive(), "a thread hung"
    if errors:
        raise errors[0]


def test_concurrent_writers_and_readers(db):
    def work(t):
        for i in range(500):
            k = b"t%d-%04d" % (t, i)
            db.put(k, k)
            assert db.get(k) == k
            if i % 100 == 0:
                list(db.iterator(prefix=b"t%d-" % t, include_value=False))
                db.snapshot().get(k)

    run_threads(8, work)
    keys = list(db.iterator(include_value=False))
    assert len(keys) == 8 * 500 and keys == sorted(keys)


def test_concurrent_batches(db):
    def work(t):
        with db.write_batch(sync=(t == 0)) as wb:
            for i in range(1000):
                wb.put(b"b%d-%04d" % (t, i), b"x")

    run_threads(6, work)
    assert len(list(db.iterator(include_value=False))) == 6000


def test_one_batch_shared_by_threads(db):
    wb = db.write_batch()

    def work(t):
        for i in range(1000):
            wb.put(b"s%d-%04d" % (t, i), b"x")

    run_threads(4, work)
    wb.write()
    assert len(list(db.iterator(include_value=False))) == 4000


def test_one_iterator_shared_by_threads(db):
    model = fill(db, 3000)
    db.flush()
    it = db.iterator(include_value=False)
    seen = [[] for _ in range(4)]

    def work(t):
        for k in it:
            seen[t].append(k)

    run_threads(4, work)
    got = sorted(k for s in seen for k in s)
    assert got == sorted(model)  # every key once, none twice
    for s in seen:
        assert s == sorted(s)  # each thread saw increasing keys


def test_one_raw_iterator_shared_by_threads(db):
    fill(db, 500)
    raw = db.raw_iterator()

    def work(t):
        for _ in range(300):
            raw.seek(b"k%04d" % (t * 100))
            try:
                raw.next()
                raw.key()
            except shale.IteratorInvalidError:
                pass

    run_threads(4, work)


def test_close_while_threads_work(path, design):
    db = shale.DB(path, create_if_missing=True, design=design, write_buffer_size=64 * 1024)
    fill(db, 200)
    started = threading.Barrier(5)

    def work(t):
        started.wait()
        it = None
        try:
            for i in range(100_000):
                db.put(b"c%d-%d" % (t, i), b"v" * 20)
                db.get(b"k0001")
                if it is None:
                    it = db.iterator()
                next(it, None)
        except RuntimeError as e:
            assert "closed" in str(e)
        else:
            pytest.fail("the store was never closed")

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    started.wait()
    db.close()
    for t in threads:
        t.join(timeout=120)
        assert not t.is_alive()
    db = shale.DB(path, design=design)
    assert db.get(b"k0001") == b"v0001"
    db.close()


def test_gil_is_released_during_store_calls(path):
    # A second Python thread keeps running while the first is inside a long store call: if
    # the GIL were held for the call, the counter could not move until it returned.
    db = shale.DB(path, create_if_missing=True, write_buffer_size=64 * 1024)
    with db.write_batch() as wb:
        for i in range(100_000):
            wb.put(b"g%06d" % i, b"v" * 100)
    done = threading.Event()
    ticks = []

    def count():
        while not done.is_set():
            ticks.append(1)

    t = threading.Thread(target=count)
    t.start()
    try:
        # The first call flushes and compacts 100,000 entries (tens of milliseconds or
        # more); a few calls leave the other thread time to be scheduled on a busy machine.
        during = 0
        for _ in range(20):
            before = len(ticks)
            db.compact_range()
            during += len(ticks) - before
            if during:
                break
    finally:
        done.set()
        t.join()
    db.close()
    assert during > 0
