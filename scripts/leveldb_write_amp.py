#!/usr/bin/env python3
"""LevelDB's write amplification on `shale bench`'s fillrandom load, for comparison with
the `leveldb` preset (docs/designs/leveldb.md, Measured).

Writes every key of [0, num) once in a seeded random order (16-byte zero-padded decimal
keys, 128-byte random values, one put each) into a new LevelDB store through plyvel, with
LevelDB's defaults (4 MiB write buffer, 2 MiB files) and no compression, 10 bloom bits and
a 64 MiB block cache, then prints the bytes this process wrote to the device
(/proc/self/io write_bytes: log, flushes and compactions) over the user bytes, and
LevelDB's own per-level compaction table. The store is removed afterwards.

Usage (Linux, in a virtualenv with `pip install plyvel`):

    python scripts/leveldb_write_amp.py 5000000 /tmp/leveldb-wa
"""
import os
import random
import shutil
import sys
import time

import plyvel


def io():
    d = {}
    with open("/proc/self/io") as f:
        for line in f:
            k, v = line.split(":")
            d[k] = int(v)
    return d


def main():
    num = int(sys.argv[1])
    path = sys.argv[2]
    shutil.rmtree(path, ignore_errors=True)
    rng = random.Random(42)
    keys = list(range(num))
    rng.shuffle(keys)
    buf = os.urandom(1 << 20)
    db = plyvel.DB(
        path,
        create_if_missing=True,
        compression=None,
        bloom_filter_bits=10,
        lru_cache_size=64 << 20,
        write_buffer_size=4 << 20,
    )
    before = io()
    start = time.time()
    for k in keys:
        off = rng.randrange(0, (1 << 20) - 128)
        db.put(b"%016d" % k, buf[off : off + 128])
    elapsed = time.time() - start
    after = io()
    user = num * (16 + 128)
    written = after["write_bytes"] - before["write_bytes"]
    cancelled = after["cancelled_write_bytes"] - before["cancelled_write_bytes"]
    print(
        f"num={num} seconds={elapsed:.1f} user={user / 1e6:.1f}MB "
        f"written={written / 1e6:.1f}MB cancelled={cancelled / 1e6:.1f}MB "
        f"write_amp={written / user:.2f}"
    )
    print(db.get_property(b"leveldb.stats").decode())
    db.close()
    shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    main()
