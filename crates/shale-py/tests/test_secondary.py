"""secondary=True (RocksDB's secondary instance, the engine's Db::open_secondary): a
read-only handle beside a running writer that try_catch_up() moves forward."""

import subprocess
import sys
import textwrap

import pytest

import shale
from conftest import fill


def writer(path, design):
    return shale.DB(path, create_if_missing=True, design=design, write_buffer_size=64 * 1024)


def test_secondary_follows_a_writer(path, design):
    """The view is the store as of the open until try_catch_up(); a snapshot keeps its
    view across catch-ups while the writer compacts."""
    w = writer(path, design)
    fill(w, 500)
    s = shale.DB(path, secondary=True)
    assert s.get(b"k0499") == b"v0499"
    assert s.get(b"last") is None
    w.put(b"last", b"1")
    assert s.get(b"last") is None
    snap = s.snapshot()
    w.compact_range()
    w.put(b"later", b"2")
    w.delete(b"k0000")
    seq = s.try_catch_up()
    assert seq > 0
    assert s.get(b"last") == b"1" and s.get(b"later") == b"2"
    assert s.get(b"k0000") is None
    assert snap.get(b"last") is None
    assert snap.get(b"k0000") == b"v0000"
    # Nothing new: the same sequence number.
    assert s.try_catch_up() == seq
    w.put(b"more", b"3")
    assert s.try_catch_up() > seq
    snap.close()
    s.close()
    w.close()


def test_iterators_keep_their_view(path, design):
    """An iterator opened before a catch-up reads what it read, even after the writer
    overwrote every key, compacted (deleting the tables the iterator reads) and the
    secondary caught up twice; a new iterator sees the new state."""
    w = writer(path, design)
    model = fill(w, 300)
    s = shale.DB(path, secondary=True)
    it = s.iterator()
    first = [next(it) for _ in range(10)]
    raw = s.raw_iterator()
    raw.seek_to_last()
    for i in range(300):
        w.put(b"k%04d" % i, b"new%04d" % i)
    w.put(b"k9999", b"added")
    w.compact_range()
    s.try_catch_up()
    w.delete_range(b"k0100", b"k0200")
    w.compact_range()
    s.try_catch_up()
    rest = list(it)
    assert first + rest == sorted(model.items())
    assert raw.item() == (b"k0299", b"v0299")
    raw.prev()
    assert raw.item() == (b"k0298", b"v0298")
    now = dict(s.iterator())
    assert len(now) == 201
    assert now[b"k0000"] == b"new0000" and now[b"k9999"] == b"added"
    assert b"k0150" not in now
    it.close()
    raw.close()
    s.close()
    w.close()


def test_writes_on_a_secondary_raise(path, design):
    w = writer(path, design)
    w.put(b"a", b"1")
    s = shale.DB(path, secondary=True)
    with pytest.raises(shale.ReadOnlyError):
        s.put(b"x", b"y")
    with pytest.raises(shale.ReadOnlyError):
        s.delete(b"a")
    with pytest.raises(shale.ReadOnlyError):
        s.delete_range(b"a", b"b")
    wb = s.write_batch()
    wb.put(b"x", b"y")
    with pytest.raises(shale.ReadOnlyError):
        wb.write()
    with pytest.raises(shale.ReadOnlyError):
        s.prefixed_db(b"p").put(b"x", b"y")
    with pytest.raises(shale.ReadOnlyError):
        s.compact_range()
    with pytest.raises(shale.ReadOnlyError):
        s.flush()
    s.try_catch_up()
    assert s.get(b"x") is None and s.get(b"a") == b"1"
    assert w.get(b"x") is None
    s.close()
    w.close()


def test_try_catch_up_needs_a_secondary(path):
    w = shale.DB(path, create_if_missing=True)
    with pytest.raises(shale.InvalidArgumentError, match="open_secondary"):
        w.try_catch_up()
    r = shale.DB(path, read_only=True)
    with pytest.raises(ValueError):
        r.try_catch_up()
    r.close()
    w.close()


def test_secondary_of_a_missing_store(path):
    with pytest.raises(shale.Error):
        shale.DB(path, secondary=True)
    with pytest.raises(shale.Error):
        shale.DB(path, secondary=True, create_if_missing=True)


def test_use_after_close(path):
    w = shale.DB(path, create_if_missing=True)
    w.put(b"a", b"1")
    s = shale.DB(path, secondary=True)
    it = s.iterator()
    snap = s.snapshot()
    s.close()
    assert s.closed
    for call in (
        s.try_catch_up,
        lambda: s.get(b"a"),
        lambda: next(it),
        lambda: snap.get(b"a"),
        s.snapshot,
        s.iterator,
    ):
        with pytest.raises(RuntimeError):
            call()
    s.close()  # idempotent
    w.put(b"b", b"2")
    w.close()


def test_secondary_of_a_point_only_design(path):
    """lsm-trie has no iterators, but its secondary follows the writer's points."""
    w = shale.DB(path, create_if_missing=True, design="lsm-trie", write_buffer_size=64 * 1024)
    fill(w, 1000)
    s = shale.DB(path, secondary=True)
    w.put(b"k0001", b"changed")
    w.delete(b"k0002")
    w.flush()
    assert s.get(b"k0001") == b"v0001"
    s.try_catch_up()
    assert s.get(b"k0001") == b"changed"
    assert s.get(b"k0002") is None
    assert s.get(b"k0999") == b"v0999"
    s.close()
    w.close()


WRITER = textwrap.dedent(
    """
    import sys
    import shale

    db = shale.DB(sys.argv[1], create_if_missing=True, design=sys.argv[2],
                  write_buffer_size=64 * 1024)
    for line in sys.stdin:
        cmd, _, arg = line.strip().partition(" ")
        if cmd == "put":
            n = int(arg)
            for i in range(n):
                db.put(b"w%06d" % i, b"round-%d" % n)
        elif cmd == "compact":
            db.compact_range()
        elif cmd == "quit":
            db.close()
            print("closed", flush=True)
            break
        print("ok", cmd, flush=True)
    """
)


def test_secondary_beside_a_writer_in_another_process(path, design):
    """The writer is another process that keeps the store open (and locked); each of its
    acknowledged writes, without sync, is seen after the next catch-up."""
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, path, design],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )

    def ask(line):
        proc.stdin.write(line + "\n")
        proc.stdin.flush()
        answer = proc.stdout.readline().strip()
        assert answer.startswith(("ok", "closed")), answer
        return answer

    try:
        ask("put 1000")
        with pytest.raises(shale.LockedError):
            shale.DB(path)
        s = shale.DB(path, secondary=True)
        assert s.get(b"w000999") == b"round-1000"
        ask("put 2000")
        assert s.get(b"w001999") is None
        snap = s.snapshot()
        s.try_catch_up()
        assert s.get(b"w001999") == b"round-2000"
        assert s.get(b"w000000") == b"round-2000"
        ask("compact")
        ask("put 500")
        s.try_catch_up()
        assert s.get(b"w000000") == b"round-500"
        assert s.get(b"w000999") == b"round-2000"
        assert snap.get(b"w000000") == b"round-1000"
        assert snap.get(b"w001999") is None
        assert ask("quit") == "closed"
        assert proc.wait(timeout=60) == 0
        s.try_catch_up()
        assert s.get(b"w000000") == b"round-500"
        snap.close()
        s.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
