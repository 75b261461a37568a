#!/usr/bin/env bash
# Run the same db_bench workload on every available Shale design and, when the binary was
# built with `--features peers`, on RocksDB (`rocksdb`, Shale's options mirrored, and
# `rocksdb-tuned`, as its users configure it) and fjall; then print a Markdown table.
#
#   scripts/bench-compare.sh [NUM] [BENCHMARKS] [extra shale bench flags...]
#
# Defaults: NUM=1000000, BENCHMARKS=fillrandom,readrandom,seekrandom,overwrite,readrandom;
# WRITE_BUFFER_SIZE (bytes, default 64 MiB) sets the memtable size of every engine and
# MEMTABLES_TO_MERGE (default 1) how many frozen ones a flush writes as one (the tuned
# presets by themselves flush four 16 MiB memtables as one).
# Results (one JSON object per benchmark and engine) go to bench-out/results.jsonl; the
# table goes to stdout and bench-out/table.md.
set -euo pipefail
cd "$(dirname "$0")/.."
num=${1:-1000000}
benchmarks=${2:-fillrandom,readrandom,seekrandom,overwrite,readrandom}
shift $(( $# > 2 ? 2 : $# )) || true
extra=("$@")

features=()
if [ "${PEERS:-1}" = 1 ] && cargo build --release -p shale-cli --features peers >/dev/null 2>&1; then
  features=(--features peers)
  peers=(rocksdb rocksdb-tuned fjall)
else
  cargo build --release -p shale-cli
  peers=()
fi
bin=${CARGO_TARGET_DIR:-./target}/release/shale
mkdir -p bench-out
out=bench-out/results.jsonl
: > "$out"
dbroot=$(mktemp -d "${TMPDIR:-/tmp}/shale-compare.XXXXXX")
trap 'rm -rf "$dbroot"' EXIT

run() {
  local label=$1; shift
  echo "== $label" >&2
  "$bin" bench --num "$num" --benchmarks "$benchmarks" --seek-nexts 10 \
    --compression none --write-buffer-size "${WRITE_BUFFER_SIZE:-67108864}" \
    --memtables-to-merge "${MEMTABLES_TO_MERGE:-1}" \
    --db "$dbroot/$label" --json "$out" "${extra[@]}" "$@" >&2
  rm -rf "${dbroot:?}/$label"
}

for design in $("$bin" bench --list-designs); do
  run "shale-$design" --engine shale --design "$design"
done
for peer in "${peers[@]}"; do
  run "$peer" --engine "$peer"
done

{
  echo "Machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr); $(date -u +%F)."
  echo "Command: scripts/bench-compare.sh $num $benchmarks ${extra[*]:-}"
  echo
  python3 scripts/bench_table.py "$out"
} | tee bench-out/table.md
