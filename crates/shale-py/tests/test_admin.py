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


def damaged_store(path):
    db = shale.DB(path, create_if_missing=True, design="leveldb")
    fill(db, 2000)
    db.flush()
    db.close()
    table = os.path.join(path, sst_files(path)[0])
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
        list(db)
    assert isinstance(e.value, shale.Error)
    assert e.value.file.endswith(os.path.basename(table))
    assert isinstance(e.value.offset, int)
    assert os.path.basename(table) in str(e.value)
    db.close()


def test_repair_sound_store(path, design):
    db = shale.DB(path, create_if_missing=True, design=design)
    fill(db, 100)
    db.flush()
    with pytest.raises(shale.LockedError):
        shale.repair_db(path)
    db.close()
    shale.repair_db(path, paranoid_checks=True)
    with shale.DB(path, design=design) as db:
        assert db.get(b"k0001") == b"v0001"


def test_repair_damaged_store_is_unsupported(path):
    table = damaged_store(path)
    with pytest.raises(shale.UnsupportedError) as e:
        shale.repair_db(path)
    assert os.path.basename(table) in str(e.value)


def test_repair_missing_store(tmp_path):
    with pytest.raises(shale.InvalidArgumentError):
        shale.repair_db(str(tmp_path / "nothing"))
