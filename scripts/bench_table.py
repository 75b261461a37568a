#!/usr/bin/env python3
"""Turn `shale bench --json` lines into a Markdown table: one row per (engine, design,
benchmark), in the order they ran. Repeated benchmarks get a suffix (#2, #3)."""
import json
import sys


def fmt(v, digits=2):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def main(path):
    rows = []
    seen = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            r = json.loads(line)
            who = r["engine"] if r["engine"] != "shale" else f"shale/{r['design']}"
            key = (who, r["benchmark"])
            seen[key] = seen.get(key, 0) + 1
            name = r["benchmark"] + (f" #{seen[key]}" if seen[key] > 1 else "")
            found = "-"
            if r.get("found") is not None:
                found = f"{r['found']}/{r.get('lookups') or r['ops']}"
            rows.append([
                who, name, fmt(r["ops_per_sec"], 0), fmt(r["micros_per_op"], 3),
                fmt(r.get("p99_us"), 1), fmt(r.get("write_amp")),
                fmt(r.get("read_bytes_per_op"), 0), fmt(r["db_size_bytes"] / 1048576, 1),
                fmt(r.get("space_amp")), found,
            ])
    head = ["engine", "benchmark", "ops/s", "µs/op", "p99 µs", "write amp",
            "read B/op", "db MiB", "space amp", "found"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "bench-out/results.jsonl")
