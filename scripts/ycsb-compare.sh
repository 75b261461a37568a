#!/usr/bin/env bash
# Run YCSB core workloads A-F (load, then run) on every available Shale design and, in a
# build with `--features peers`, on RocksDB (`rocksdb`, Shale's options mirrored, and
# `rocksdb-tuned`, as its users configure it) and fjall; print a Markdown table of the run
# phases (and each load's write amplification).
#
#   scripts/ycsb-compare.sh [RECORDS] [OPERATIONS]        (defaults 200000 200000)
#
# JSON lines go to bench-out/ycsb.jsonl, the table to stdout and bench-out/ycsb.md.
# WRITE_BUFFER_SIZE (bytes, default 64 MiB) sets the memtable size of every engine, and
# MEMTABLES_TO_MERGE (default 1) how many frozen ones a flush writes as one, so the presets
# (four 16 MiB memtables flushed as one by themselves) and the peers compare at one shape.
set -euo pipefail
cd "$(dirname "$0")/.."
records=${1:-200000}
operations=${2:-200000}
if [ "${PEERS:-1}" = 1 ] && cargo build --release -p shale-cli --features peers >/dev/null 2>&1; then
  peers=(rocksdb rocksdb-tuned fjall)
else
  cargo build --release -p shale-cli
  peers=()
fi
bin=${CARGO_TARGET_DIR:-./target}/release/shale
mkdir -p bench-out
out=bench-out/ycsb.jsonl
: > "$out"
dbroot=$(mktemp -d "${TMPDIR:-/tmp}/shale-ycsb.XXXXXX")
trap 'rm -rf "$dbroot"' EXIT

engines=()
for design in $("$bin" bench --list-designs); do engines+=("shale:$design"); done
for peer in "${peers[@]}"; do engines+=("$peer:"); done
for e in "${engines[@]}"; do
  engine=${e%%:*}; design=${e#*:}
  for w in a b c d e f; do
    echo "== $engine $design workload $w" >&2
    args=(--engine "$engine" --workload "$w" --records "$records" --operations "$operations"
      --write-buffer-size "${WRITE_BUFFER_SIZE:-67108864}"
      --memtables-to-merge "${MEMTABLES_TO_MERGE:-1}")
    [ -n "$design" ] && args+=(--design "$design")
    "$bin" ycsb "${args[@]}" --db "$dbroot/db" --json "$out" >&2
    rm -rf "${dbroot:?}/db"
  done
done

{
  echo "Machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr); $(date -u +%F)."
  echo "Command: scripts/ycsb-compare.sh $records $operations"
  echo
  python3 - "$out" <<'PY'
import json, sys
rows = {}
order = []
for line in open(sys.argv[1]):
    if not line.startswith("{"):
        continue
    r = json.loads(line)
    who = r["engine"] if r["engine"] != "shale" else f"shale/{r['design']}"
    if who not in rows:
        rows[who] = {}
        order.append(who)
    rows[who][(r["workload"], r["phase"])] = r
ws = "abcdef"
print("| engine | " + " | ".join(f"{w.upper()} ops/s (p99 µs)" for w in ws) + " | load write amp |")
print("|---|" + "---|" * (len(ws) + 1))
for who in order:
    cells = []
    for w in ws:
        r = rows[who].get((w, "run"))
        cells.append("-" if r is None else f"{r['ops_per_sec']:.0f} ({r['p99_us']:.0f})")
    load = rows[who].get(("a", "load"))
    wa = "-" if load is None or load["write_amp"] is None else f"{load['write_amp']:.2f}"
    print(f"| {who} | " + " | ".join(cells) + f" | {wa} |")
PY
} | tee bench-out/ycsb.md
