"""DB: open options, get/put/delete, properties, compaction, sizes, close."""

import os
import pathlib
import sys

import pytest

import shale
from conftest import fill


def test_put_get_delete(db):
    assert db.get(b"missing") is None
    assert db.get(b"missing", b"dflt") == b"dflt"
    assert db.get(b"missing", default=7) == 7
    db.put(b"k", b"v")
    assert db.get(b"k") == b"v"
    db.put(b"k", b"v2", sync=True)
    assert db.get(b"k", verify_checksums=True, fill_cache=False) == b"v2"
    db.delete(b"k")
    assert db.get(b"k") is None
    db.delete(b"never-there", sync=True)


def test_empty_key_and_value(db):
    db.put(b"", b"")
    assert db.get(b"") == b""


def test_buffer_values(db):
    db.put(b"ba", bytearray(b"xyz"))
    db.put(b"mv", memoryview(b"abcdef")[1:4])
    assert db.get(b"ba") == b"xyz"
    assert db.get(b"mv") == b"bcd"


def test_large_value_and_binary_key(db):
    key = bytes(range(256))
    value = os.urandom(300_000)
    db.put(key, value)
    assert db.get(key) == value


def test_survives_reopen(path, design):
    db = shale.DB(path, create_if_missing=True, design=design, write_buffer_size=64 * 1024)
    model = fill(db, 2000)
    db.delete(b"k0005")
    del model[b"k0005"]
    db.close()
    db = shale.DB(path, design=design)
    assert dict(db) == model
    db.close()


def test_many_keys_reach_tables(db):
    model = fill(db, 3000)
    db.flush()
    db.compact_range()
    for k, v in model.items():
        assert db.get(k) == v
    assert dict(db) == model
    levels = db.get_property(b"shale.levels")
    assert levels is not None and sum(int(n) for n in levels.split()) > 0


def test_name_and_repr(path):
    db = shale.DB(path, create_if_missing=True)
    assert db.name == path
    assert "shale.DB" in repr(db) and path in repr(db)
    db.close()
    assert "(closed)" in repr(db)


def test_name_types(tmp_path):
    for name in (str(tmp_path / "s"), os.fsencode(str(tmp_path / "b")), tmp_path / "p"):
        with shale.DB(name, create_if_missing=True) as db:
            db.put(b"a", b"b")
            assert db.name == name
    with pytest.raises(TypeError):
        shale.DB(123, create_if_missing=True)


def test_context_manager_closes(path):
    with shale.DB(path, create_if_missing=True) as db:
        db.put(b"a", b"1")
    assert db.closed
    with pytest.raises(RuntimeError):
        db.get(b"a")


def test_create_if_missing_defaults_to_false(path, tmp_path):
    with pytest.raises(shale.InvalidArgumentError) as e:
        shale.DB(path)
    assert isinstance(e.value, shale.Error) and isinstance(e.value, ValueError)
    assert "create_if_missing" in str(e.value)
    # An existing empty directory is not a store either.
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(shale.InvalidArgumentError):
        shale.DB(str(empty))


def test_error_if_exists(path):
    shale.DB(path, create_if_missing=True).close()
    with pytest.raises(shale.InvalidArgumentError, match="error_if_exists"):
        shale.DB(path, error_if_exists=True)
    shale.DB(path, error_if_exists=False).close()


def test_second_open_is_locked(path):
    db = shale.DB(path, create_if_missing=True)
    with pytest.raises(shale.LockedError) as e:
        shale.DB(path)
    assert isinstance(e.value, shale.IOError)
    assert isinstance(e.value, OSError)
    assert e.value.path.endswith("LOCK")
    db.close()
    shale.DB(path).close()


def test_read_only_beside_a_writer(path, design):
    """read_only=True (RocksDB's OpenForReadOnly): no lock, the store as of the open,
    writes refused; it writes nothing, so the writer keeps going."""
    w = shale.DB(path, create_if_missing=True, design=design, write_buffer_size=64 * 1024)
    fill(w, 500)
    w.put(b"last", b"1")
    r = shale.DB(path, read_only=True)
    assert r.get(b"last") == b"1"
    assert sum(1 for _ in r.iterator(prefix=b"k")) == 500
    with pytest.raises(shale.ReadOnlyError):
        r.put(b"x", b"y")
    with pytest.raises(shale.ReadOnlyError):
        r.delete(b"last")
    w.put(b"later", b"2")
    assert r.get(b"later") is None
    assert w.get(b"later") == b"2"
    r.close()
    w.close()
    with pytest.raises(shale.Error):
        shale.DB(path + "-missing", read_only=True)


def test_gc_closes_the_store(path):
    db = shale.DB(path, create_if_missing=True)
    db.put(b"a", b"1")
    del db
    # The lock is released with the last reference.
    db = shale.DB(path)
    assert db.get(b"a") == b"1"
    db.close()


def test_plyvel_options_are_accepted(path):
    db = shale.DB(
        path,
        create_if_missing=True,
        error_if_exists=True,
        paranoid_checks=True,
        write_buffer_size=1 << 20,
        max_open_files=100,
        lru_cache_size=1 << 20,
        block_size=8192,
        block_restart_interval=8,
        max_file_size=1 << 20,
        compression="snappy",
        bloom_filter_bits=10,
    )
    fill(db, 500)
    db.flush()
    assert db.get(b"k0042") == b"v0042"
    db.close()


@pytest.mark.parametrize("compression", [None, "none", "snappy", "lz4", b"lz4", "zstd"])
def test_compression(path, compression):
    with shale.DB(path, create_if_missing=True, compression=compression) as db:
        db.put(b"a", b"x" * 10000)
        db.flush()
        assert db.get(b"a") == b"x" * 10000


def test_axes(path):
    db = shale.DB(
        path,
        create_if_missing=True,
        design="leveldb",
        layout="flsm",
        values="vlog",
        memory="skiplist",
        min_separated_value_size=0,
        max_background_compactions=2,
    )
    design = db.get_property(b"shale.design")
    assert b"values=vlog" in design and b"flsm" in design.lower()
    model = fill(db, 300)
    assert dict(db) == model
    db.close()


@pytest.mark.parametrize("mmap_reads", [True, False])
def test_mmap_reads(path, mmap_reads):
    # Tables read through memory maps (every design's default) or with pread: the same
    # data, through flushes, a compaction that deletes mapped tables, and a reopen.
    opts = dict(design="leveldb", mmap_reads=mmap_reads, write_buffer_size=64 * 1024)
    with shale.DB(path, create_if_missing=True, **opts) as db:
        model = fill(db, 3000)
        db.flush()
        assert dict(db) == model
        db.compact_range()
        for k, v in model.items():
            assert db.get(k) == v
    with shale.DB(path, **opts) as db:
        assert dict(db) == model
    with pytest.raises(TypeError):
        shale.DB(path, mmap_reads="yes")


def writable_log_maps(path):
    """This process's writable shared maps of log files under `path` (/proc/self/maps)."""
    with open("/proc/self/maps") as f:
        return [
            line for line in f
            if str(path) in line and line.split()[1].startswith("rw") and line.rstrip().endswith(".log")
        ]


@pytest.mark.parametrize("mmap_log_writes", [True, False])
@pytest.mark.parametrize("design", ["leveldb", "wisckey"])
def test_mmap_log_writes(path, design, mmap_log_writes):
    # Small log appends copied into a writable map (every design's default) or written
    # with write(2): the same data through log switches, a reopen that replays the logs
    # (no flush: the last memtable comes back from its log alone), and a second reopen.
    opts = dict(design=design, mmap_log_writes=mmap_log_writes, write_buffer_size=64 * 1024)
    with shale.DB(path, create_if_missing=True, **opts) as db:
        model = fill(db, 3000)
        assert dict(db) == model
    for _ in range(2):
        with shale.DB(path, **opts) as db:
            assert dict(db) == model
    with pytest.raises(TypeError):
        shale.DB(path, mmap_log_writes="yes")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="logs are mapped on Linux")
@pytest.mark.parametrize("mmap_log_writes", [True, False])
def test_mmap_log_writes_maps_the_log_exactly_when_on(path, mmap_log_writes):
    # The log is mapped once its space is reserved ahead of the writer (a thread does
    # that beside the puts): put until the map shows or many puts went by.
    with shale.DB(path, create_if_missing=True, design="leveldb", mmap_log_writes=mmap_log_writes) as db:
        for i in range(100_000):
            db.put(b"k%06d" % i, b"v" * 20)
            if i % 1000 == 999 and writable_log_maps(path):
                break
        assert bool(writable_log_maps(path)) == mmap_log_writes


def test_designs_listed():
    designs = shale.available_designs()
    assert {"leveldb", "pebblesdb", "wisckey"} <= set(designs)


def test_a_store_reopens_with_its_own_design(path, design):
    with shale.DB(path, create_if_missing=True, design=design, bloom_filter_bits=16) as db:
        db.put(b"k", b"v")
        created = db.get_property(b"shale.design")
    with shale.DB(path) as db:
        assert db.get(b"k") == b"v"
        assert db.get_property(b"shale.design") == created
    # A design that differs in an axis fixed on disk (layout or values) is refused (the
    # memory component is not on disk: leveldb and flodb differ only there).
    other = "wisckey" if design in ("leveldb", "flodb") else "leveldb"
    with pytest.raises(shale.InvalidArgumentError, match="but the options ask for"):
        shale.DB(path, design=other)


def test_design_property(path, design):
    with shale.DB(path, create_if_missing=True, design=design) as db:
        d = db.get_property(b"shale.design")
        expected = {"leveldb": b"layout=leveled values=inline",
                    "pebblesdb": b"values=inline",
                    "wisckey": b"values=vlog"}.get(design, b"")
        assert expected in d


def test_get_property(db):
    fill(db, 1000)
    db.flush()
    assert b"Level" in db.get_property(b"shale.stats")
    assert db.get_property(b"leveldb.stats") == db.get_property(b"shale.stats")
    assert int(db.get_property(b"leveldb.num-files-at-level0")) >= 0
    assert int(db.get_property(b"leveldb.approximate-memory-usage")) >= 0
    assert db.get_property(b"no.such.property") is None
    assert db.get_property(b"\xff\xfe") is None
    with pytest.raises(TypeError):
        db.get_property("shale.stats")


def test_compact_range(db):
    model = fill(db, 1000)
    db.compact_range(start=b"k0100", stop=b"k0200")
    db.compact_range(start=b"k0500")
    db.compact_range(stop=b"k0010")
    db.compact_range()
    assert dict(db) == model


def test_approximate_sizes(db):
    fill(db, 100)  # keys of 5 bytes, values of 5 bytes: all in the memtable
    # As LevelDB's: an estimate from the tables, so writes still in memory count nothing.
    assert db.approximate_sizes((b"k0000", b"k5000")) == [0]
    fill(db, 5000)
    db.compact_range()
    whole = db.approximate_size(b"k0000", b"k5000")
    assert whole > 5000 * 10 // 2
    half = db.approximate_size(b"k0000", b"k2500")
    assert 0.3 * whole < half < 0.7 * whole
    assert db.approximate_sizes((b"k0000", b"k2500"), (b"z", b"a"), (b"a", b"b")) == [half, 0, 0]
    assert db.approximate_sizes() == []
    with pytest.raises(TypeError):
        db.approximate_size("a", "b")
    with pytest.raises(TypeError):
        db.approximate_sizes(("a", b"b"))


def test_key_too_large(db):
    with pytest.raises(shale.InvalidArgumentError, match="key"):
        db.put(b"k" * (64 * 1024 + 1), b"v")


class TestBadArguments:
    def test_key_types(self, db):
        for bad in ("str", 1, None, bytearray(b"x")):
            with pytest.raises(TypeError):
                db.get(bad)
            with pytest.raises(TypeError):
                db.put(bad, b"v")
            with pytest.raises(TypeError):
                db.delete(bad)

    def test_value_types(self, db):
        for bad in ("str", 1, None, 2.5):
            with pytest.raises(TypeError):
                db.put(b"k", bad)

    def test_positional_options_rejected(self, path):
        with pytest.raises(TypeError):
            shale.DB(path, True)
        with shale.DB(path, create_if_missing=True) as db:
            with pytest.raises(TypeError):
                db.put(b"k", b"v", True)
            with pytest.raises(TypeError):
                db.iterator(True)

    def test_unknown_keyword(self, path):
        with pytest.raises(TypeError):
            shale.DB(path, create_if_missing=True, no_such_option=1)

    def test_unknown_design(self, path):
        with pytest.raises(shale.InvalidArgumentError, match="unknown design"):
            shale.DB(path, create_if_missing=True, design="nope")

    def test_settings(self, path):
        # The paper settings run LevelDB's 4 MiB memtable and tree; the tuned ones are
        # the design's with larger sizes.
        sizes = {}
        for settings in ("tuned", "paper"):
            with shale.DB(f"{path}-{settings}", create_if_missing=True, design="leveldb",
                          settings=settings) as db:
                db.put(b"k", b"v")
                assert db.get(b"k") == b"v"
                record = db.get_property(b"shale.options").decode()
                assert record.startswith("shale-options ")
                fields = dict(line.split("=", 1) for line in record.splitlines()[1:])
                assert fields["layout"] == "leveled"
                sizes[settings] = int(fields["write_buffer_size"])
        assert sizes["paper"] == 4 << 20
        assert sizes["tuned"] > sizes["paper"]
        with shale.DB(f"{path}-bloom", create_if_missing=True, design="leveldb",
                      memtable_bloom_ratio=0.05) as db:
            for i in range(1000):
                db.put(b"%05d" % i, b"v")
            assert db.get(b"00999") == b"v" and db.get(b"01000") is None
            assert "memtable_bloom_ratio=0.05" in db.get_property(b"shale.options").decode()
        with pytest.raises(shale.InvalidArgumentError, match="memtable_bloom_ratio"):
            shale.DB(f"{path}-bad", create_if_missing=True, memtable_bloom_ratio=0.5)
        with shale.DB(f"{path}-merge", create_if_missing=True, design="leveldb",
                      write_buffer_size=16 << 10, min_memtables_to_merge=7) as db:
            for i in range(500):
                db.put(b"%05d" % i, b"v" * 100)
            fields = dict(line.split("=", 1) for line in
                          db.get_property(b"shale.options").decode().splitlines()[1:])
            assert fields["min_memtables_to_merge"] == "7"
            assert int(fields["max_immutable_memtables"]) >= 9
            # A compaction flushes the frozen memtables first, however many wait.
            db.compact_range()
            assert db.get_property(b"shale.num-immutable-mem-table") == b"0"
            assert all(db.get(b"%05d" % i) == b"v" * 100 for i in range(500))
        with pytest.raises(shale.InvalidArgumentError, match="min_memtables_to_merge"):
            shale.DB(f"{path}-bad", create_if_missing=True, min_memtables_to_merge=0)
        for keep in (0, 1024):
            with shale.DB(f"{path}-carry{keep}", create_if_missing=True, design="wisckey",
                          vlog_memtable_value_max=keep) as db:
                for i in range(300):
                    db.put(b"%05d" % i, b"%d" % i * 200)
                assert "vlog_memtable_value_max=%d" % keep in \
                    db.get_property(b"shale.options").decode()
                assert list(db) == [(b"%05d" % i, b"%d" % i * 200) for i in range(300)]
                db.compact_range()
                assert all(db.get(b"%05d" % i) == b"%d" % i * 200 for i in range(300))
        with pytest.raises(ValueError, match="settings"):
            shale.DB(path, create_if_missing=True, design="leveldb", settings="fast")
        with pytest.raises(ValueError, match="give 'design'"):
            shale.DB(path, create_if_missing=True, settings="paper")

    def test_every_listed_design_opens(self, path):
        # Every design the package lists opens (none is a placeholder); what a design
        # cannot do raises UnsupportedError (test_point_only.py: scans of lsm-trie).
        for i, design in enumerate(shale.available_designs()):
            db = shale.DB(f"{path}-{i}", create_if_missing=True, design=design)
            db.put(b"k", b"v")
            assert db.get(b"k") == b"v"
            db.close()
        assert shale.Unsupported is shale.UnsupportedError
        assert issubclass(shale.UnsupportedError, NotImplementedError)

    def test_bad_axis(self, path):
        for kw in ({"layout": "btree"}, {"values": "x"}, {"memory": "hash"}):
            with pytest.raises(ValueError):
                shale.DB(path, create_if_missing=True, **kw)
        with pytest.raises(TypeError):
            shale.DB(path, create_if_missing=True, design=3)

    def test_bad_compression(self, path):
        with pytest.raises(ValueError):
            shale.DB(path, create_if_missing=True, compression="brotli")
        with pytest.raises(TypeError):
            shale.DB(path, create_if_missing=True, compression=1)

    def test_option_out_of_range(self, path):
        with pytest.raises(shale.InvalidArgumentError, match="bloom_bits_per_key"):
            shale.DB(path, create_if_missing=True, bloom_filter_bits=100)
        with pytest.raises(shale.InvalidArgumentError, match="write_buffer_size"):
            shale.DB(path, create_if_missing=True, write_buffer_size=10)
        with pytest.raises(OverflowError):
            shale.DB(path, create_if_missing=True, write_buffer_size=-1)
        with pytest.raises(TypeError):
            shale.DB(path, create_if_missing=True, write_buffer_size="big")

    def test_comparator(self, path):
        with pytest.raises(ValueError, match="together"):
            shale.DB(path, create_if_missing=True, comparator=lambda a, b: 0)
        with pytest.raises(shale.UnsupportedError, match="comparator"):
            shale.DB(
                path,
                create_if_missing=True,
                comparator=lambda a, b: 0,
                comparator_name=b"mine",
            )


def test_pathlib_name(tmp_path):
    p = pathlib.Path(tmp_path) / "pl"
    with shale.DB(p, create_if_missing=True) as db:
        db.put(b"a", b"b")
    assert (p / "CURRENT").exists()


def test_refused_open_creates_no_directory(tmp_path):
    # A refused open leaves nothing it made: no store directory, no parent of it.
    new = tmp_path / "new" / "store"
    with pytest.raises(shale.InvalidArgumentError):
        shale.DB(str(new), create_if_missing=True, design="nonsense")
    with pytest.raises(shale.InvalidArgumentError):
        shale.DB(str(new), create_if_missing=True, write_buffer_size=0)
    with pytest.raises(shale.InvalidArgumentError):
        shale.DB(str(new))
    assert not (tmp_path / "new").exists()
