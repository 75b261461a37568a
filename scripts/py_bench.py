#!/usr/bin/env python3
"""Python loops over `shale` (the bindings) and plyvel (LevelDB), in one run, interleaved.

Phases, each a plain Python loop over precomputed keys (16 bytes) and values (100 bytes):

  fillrandom   --num puts in a random order into a new store
  readrandom   --num gets of those keys in another random order (every one must be found)
  readseq      one full forward iteration (every key must be seen)
  fillbatch    --num puts in write batches of --batch, random order, into a new store

Engines: `shale` (the `leveldb` design in its default, tuned settings: four 16 MiB
memtables flushed as one), `shale-64m` (the same with one 64 MiB memtable flushed alone,
the tuned settings before session 21), `shale-paper` (the `leveldb` design in its paper
settings: LevelDB's 4 MiB memtables and tree), `plyvel` (plyvel's
defaults: 4 MiB write buffer, 8 MiB block cache, no bloom filter, Snappy), and
`plyvel-matched` (plyvel with Shale's 64 MiB block cache and 10 bloom bits per key, and no
compression). Rounds interleave the engines (the order rotates each round) so a noisy
neighbour on a shared machine hits each about as much. Prints one JSON line per phase and
a Markdown table of the medians at the end.

Usage (from the repository root, in a virtualenv with `pip install ./crates/shale-py
plyvel`):

    python scripts/py_bench.py --num 1000000 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import sys
import time


def open_store(engine: str, path: str):
    if engine in ("shale", "shale-paper", "shale-64m"):
        import shale

        settings = "paper" if engine == "shale-paper" else "tuned"
        if engine == "shale-64m":
            return shale.DB(path, create_if_missing=True, design="leveldb",
                            write_buffer_size=64 << 20, min_memtables_to_merge=1)
        return shale.DB(path, create_if_missing=True, design="leveldb", settings=settings)
    import plyvel

    if engine == "plyvel":
        return plyvel.DB(path, create_if_missing=True)
    if engine == "plyvel-matched":
        return plyvel.DB(
            path,
            create_if_missing=True,
            lru_cache_size=64 << 20,
            bloom_filter_bits=10,
            compression=None,
        )
    raise SystemExit(f"unknown engine {engine}")


def fill(db, keys, values):
    put = db.put
    nv = len(values)
    for i, k in enumerate(keys):
        put(k, values[i % nv])


def fill_batch(db, keys, values, batch):
    nv = len(values)
    for lo in range(0, len(keys), batch):
        with db.write_batch() as wb:
            put = wb.put
            for i in range(lo, min(lo + batch, len(keys))):
                put(keys[i], values[i % nv])


def read_random(db, keys):
    get = db.get
    found = 0
    for k in keys:
        if get(k) is not None:
            found += 1
    return found


def read_seq(db):
    n = 0
    for _k, _v in db:
        n += 1
    return n


def timed(f, *args):
    t = time.perf_counter()
    r = f(*args)
    return time.perf_counter() - t, r


def run_engine(engine, base, keys, read_keys, values, batch, num):
    results = {}
    path = os.path.join(base, engine)
    shutil.rmtree(path, ignore_errors=True)
    db = open_store(engine, path)
    results["fillrandom"], _ = timed(fill, db, keys, values)
    results["readrandom"], found = timed(read_random, db, read_keys)
    if found != num:
        raise SystemExit(f"{engine}: readrandom found {found} of {num}")
    results["readseq"], seen = timed(read_seq, db)
    if seen != num:
        raise SystemExit(f"{engine}: readseq saw {seen} of {num}")
    db.close()
    shutil.rmtree(path, ignore_errors=True)
    db = open_store(engine, path)
    results["fillbatch"], _ = timed(fill_batch, db, keys, values, batch)
    db.close()
    shutil.rmtree(path, ignore_errors=True)
    return results


PHASES = ["fillrandom", "readrandom", "readseq", "fillbatch"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--num", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--key-size", type=int, default=16)
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--engines", default="shale,shale-paper,plyvel,plyvel-matched")
    ap.add_argument("--dir", default="bench-out/py", help="where the stores are made")
    ap.add_argument("--seed", type=int, default=301)
    args = ap.parse_args()

    engines = args.engines.split(",")
    rng = random.Random(args.seed)
    keys = [b"%0*d" % (args.key_size, i) for i in range(args.num)]
    rng.shuffle(keys)
    read_keys = list(keys)
    rng.shuffle(read_keys)
    # 64Ki distinct random values, cycled: incompressible, as the keys' order is random.
    values = [rng.randbytes(args.value_size) for _ in range(1 << 16)]
    os.makedirs(args.dir, exist_ok=True)

    versions = {"python": platform.python_version()}
    for e in engines:
        mod = "shale" if e.startswith("shale") else "plyvel"
        m = __import__(mod)
        versions[mod] = getattr(m, "__version__", "?")
        if mod == "plyvel":
            versions["leveldb"] = m.__leveldb_version__
    print(
        json.dumps(
            {
                "machine": platform.platform(),
                "cpus": os.cpu_count(),
                "versions": versions,
                "num": args.num,
                "key_size": args.key_size,
                "value_size": args.value_size,
                "batch": args.batch,
                "dir": os.path.abspath(args.dir),
            }
        ),
        flush=True,
    )

    secs = {e: {p: [] for p in PHASES} for e in engines}
    for r in range(args.rounds):
        order = engines[r % len(engines):] + engines[: r % len(engines)]
        for e in order:
            res = run_engine(e, args.dir, keys, read_keys, values, args.batch, args.num)
            for p, s in res.items():
                secs[e][p].append(s)
                print(
                    json.dumps(
                        {
                            "round": r,
                            "engine": e,
                            "phase": p,
                            "secs": round(s, 3),
                            "ops_per_sec": round(args.num / s),
                        }
                    ),
                    flush=True,
                )

    def kops(e, p):
        return args.num / statistics.median(secs[e][p]) / 1000

    print()
    head = "| phase | " + " | ".join(f"{e} (K ops/s)" for e in engines)
    others = [e for e in engines if e != "shale"]
    if "shale" in engines:
        head += " | " + " | ".join(f"shale / {e}" for e in others)
    print(head + " |")
    print("|---" * (1 + len(engines) + (len(others) if "shale" in engines else 0)) + "|")
    for p in PHASES:
        row = f"| {p} | " + " | ".join(
            "{:.0f} ({})".format(
                kops(e, p), ", ".join(f"{args.num / s / 1000:.0f}" for s in secs[e][p])
            )
            for e in engines
        )
        if "shale" in engines:
            row += " | " + " | ".join(f"{kops('shale', p) / kops(e, p):.2f}x" for e in others)
        print(row + " |")
    print(f"\nmedians of {args.rounds} rounds; each round's figure in parentheses")
    return 0


if __name__ == "__main__":
    sys.exit(main())
