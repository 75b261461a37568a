#!/usr/bin/env python3
"""FloDB's memory scaling (issue 20, measurement 1; the paper's Fig. 15 and 17) with
`shale bench`: fillrandom of 16-byte keys and 100-byte values from two writer threads,
at several write-buffer sizes, for `flodb` (hash membuffer over the skiplist) and
`leveldb` (the skiplist alone), with the store (`full`) or the memory component alone
(`--memory-only`: full memtables are dropped, nothing is logged).

Each size writes enough keys to fill the write buffer at least twice (2.2 x size / 116
bytes: an entry's user bytes, so the memtable, whose entries cost more, fills sooner).
The designs alternate within each size, so drift of the machine hits both. Prints one
Markdown row per run and writes every bench JSON under OUT.

Usage:

    python3 scripts/flodb_scaling.py SHALE_BINARY OUT [--mode memory-only|full]
        [--sizes 64M,256M,1G,4G] [--designs flodb,leveldb] [--rounds 1]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(s):
    s = s.strip()
    if s[-1].upper() in UNITS:
        return int(float(s[:-1]) * UNITS[s[-1].upper()])
    return int(s)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("shale")
    ap.add_argument("out")
    ap.add_argument("--mode", choices=["memory-only", "full"], default="memory-only")
    ap.add_argument("--sizes", default="64M,256M,1G,4G")
    ap.add_argument("--designs", default="flodb,leveldb")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    print("| mode | design | write buffer | keys | ops/s | p99 us | direct | WA |")
    print("|---|---|---|---|---|---|---|---|")
    for size_s in args.sizes.split(","):
        size = parse_size(size_s)
        num = int(2.2 * size / 116)
        for r in range(args.rounds):
            for design in args.designs.split(","):
                db = os.path.join(args.out, f"db-{design}")
                shutil.rmtree(db, ignore_errors=True)
                js = os.path.join(args.out, f"{args.mode}-{design}-{size_s}-r{r}.json")
                cmd = [
                    args.shale, "bench", "--design", design, "--benchmarks", "fillrandom",
                    "--threads", str(args.threads), "--num", str(num), "--key-size", "16",
                    "--value-size", "100", "--write-buffer-size", str(size),
                    # One memtable of the size flushed alone, as the comparison
                    # (the tuned presets otherwise flush four at once: 4x the memory).
                    "--memtables-to-merge", "1",
                    "--db", db, "--json", js,
                ]
                if args.mode == "memory-only":
                    cmd.append("--memory-only")
                subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
                shutil.rmtree(db, ignore_errors=True)
                with open(js) as f:
                    d = json.load(f)
                mem = d.get("engine_memory") or {}
                direct = mem.get("direct", "")
                print(
                    f"| {args.mode} | `{design}` | {size_s} | {num:,} | "
                    f"{d['ops_per_sec']:,.0f} | {d['p99_us']:.1f} | {direct} | "
                    f"{d['write_amp']:.2f} |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
