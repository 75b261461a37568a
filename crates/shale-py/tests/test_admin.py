"""destroy_db, repair_db, and what a damaged file raises."""

import os

import pytest

import shale
from conftest import fill


def test_destroy(path, design):
    db = shale.DB(path, create_if_missing=True, design=design, write_buffer_size=64 * 1024)
    fill(db, 2000)
    with pytest.raises(shale.LockedError):
        shale.destroy_db(path)
    db.close()
    shale.destroy_db(path)
    assert not os.path.exists(path)
    with pytest.raises(shale.InvalidArgumentError):
        shale.DB(path)
    shale.destroy_db(path)  # nothing there: nothing to do


def test_destroy_keeps_foreign_files(path):
    shale.DB(path, create_if_missing=True).close()
    for name in ["notes.txt", "draft.tmp", "7.sst.bak"]:
        with open(os.path.join(path, name), "w") as f:
            f.write("mine")
    shale.destroy_db(path)
    assert sorted(os.listdir(path)) == ["7.sst.bak", "draft.tmp", "notes.txt"]


def test_destroy_bad_name():
    with pytest.raises(TypeError):
        shale.destroy_db(1)


def sst_files(path):
    return sorted(f for f in os.listdir(path) if f.endswith(".sst"))


def first_table(path):
    """Make a `leveldb` store of 2000 keys flushed into tables; return its first table."""
    db = shale.DB(path, create_if_missing=True, design="leveldb")
    fill(db, 2000)
    db.flush()
    db.close()
    return os.path.join(path, sst_files(path)[0])


def damaged_store(path):
    table = first_table(path)
    with open(table, "r+b") as f:
        f.seek(100)
        b = f.read(1)
        f.seek(100)
        f.write(bytes([b[0] ^ 0xFF]))
    return table


def test_corruption_names_file_and_offset(path):
    table = damaged_store(path)
    db = shale.DB(path)
    with pytest.raises(shale.CorruptionError) as e:
        list(db.iterator(verify_checksums=True))
    assert isinstance(e.value, shale.Error)
    assert e.value.file.endswith(os.path.basename(table))
    assert isinstance(e.value.offset, int)
    assert os.path.basename(table) in str(e.value)
    db.close()


def test_verify_checksums_per_read(path):
    # As plyvel: reads check table blocks' checksums only when asked.
    table = first_table(path)
    with open(table, "r+b") as f:
        data = bytearray(f.read())
        at = data.index(b"v0001")
        data[at + 4] ^= 0x01  # b"v0001" becomes b"v0000": the block still parses
        f.seek(0)
        f.write(data)
    with shale.DB(path) as db:
        assert db.get(b"k0001") == b"v0000"
        for it in (db.iterator(start=b"k0001", stop=b"k0002"), db.snapshot().iterator()):
            assert dict(it).get(b"k0001") == b"v0000"
        with pytest.raises(shale.CorruptionError) as e:
            db.get(b"k0001", verify_checksums=True)
        assert e.value.file.endswith(os.path.basename(table))
        with pytest.raises(shale.CorruptionError):
            list(db.iterator(verify_checksums=True))
        with pytest.raises(shale.CorruptionError):
            db.snapshot().get(b"k0001", verify_checksums=True)
        with pytest.raises(shale.CorruptionError):
            db.prefixed_db(b"k").get(b"0001", verify_checksums=True)
        it = db.raw_iterator(verify_checksums=True)
        with pytest.raises(shale.CorruptionError):
            it.seek_to_first()
            while it.valid():
                it.next()


def test_repair_sound_store(path, design):
    db = shale.DB(path, create_if_missing=True, design=design)
    fill(db, 100)
    db.flush()
    with pytest.raises(shale.LockedError):
        shale.repair_db(path)
    db.close()
    report = shale.repair_db(path, paranoid_checks=True)
    assert report["set_aside"] == []
    with shale.DB(path, design=design) as db:
        assert db.get(b"k0001") == b"v0001"


def test_repair_damaged_store(path):
    table = damaged_store(path)
    report = shale.repair_db(path)
    name = os.path.basename(table)
    aside = [s for s in report["set_aside"] if s["name"] == name]
    assert len(aside) == 1, report
    assert aside[0]["moved_to"] == "lost/" + name
    assert os.path.exists(os.path.join(path, "lost", name))
    assert not os.path.exists(table)
    assert isinstance(aside[0]["smallest"], bytes)
    # The other tables' keys are all there, and the store takes writes.
    lost = lambda k: aside[0]["smallest"] <= k <= aside[0]["largest"]
    with shale.DB(path) as db:
        for i in range(2000):
            k = b"k%04d" % i
            if not lost(k):
                assert db.get(k) == b"v%04d" % i
        db.put(b"after", b"repair")
    with shale.DB(path) as db:
        assert db.get(b"after") == b"repair"


def test_repair_without_manifest(path, design):
    db = shale.DB(path, create_if_missing=True, design=design)
    fill(db, 300)
    db.flush()
    db.put(b"late", b"in the log")
    db.close()
    for f in os.listdir(path):
        if f == "CURRENT" or f.startswith("MANIFEST-"):
            os.remove(os.path.join(path, f))
    with pytest.raises(shale.CorruptionError):
        shale.DB(path)
    report = shale.repair_db(path, design=design)
    assert report["set_aside"] == []
    assert report["tables"] >= 1
    with shale.DB(path) as db:
        assert db.get(b"k0001") == b"v0001"
        assert db.get(b"late") == b"in the log"


def test_repair_missing_store(tmp_path):
    with pytest.raises(shale.InvalidArgumentError):
        shale.repair_db(str(tmp_path / "nothing"))
