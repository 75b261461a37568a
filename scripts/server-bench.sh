#!/usr/bin/env bash
# redis-benchmark against shale-server and Debian's redis-server, in interleaved rounds
# (each round starts every target fresh and runs them one after another, the order rotated
# each round), then 3 shale-servers behind nutcracker against one direct.
#
#   scripts/server-bench.sh [ROUNDS] [N]        (defaults 3 and 200000)
#
# Every run: redis-benchmark -t set,get -n N -r 1000000 -d 100 -c 50 -P {1,16} --csv.
# Writes bench-out/server.csv (round,target,pipeline,test,rps,p50_ms,p99_ms) and prints a
# Markdown table of the medians over rounds. Extra targets: EXTRA_TARGETS="name=command"
# entries separated by ';', the command's port as {port} and store as {dir}.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
n=${2:-200000}
bin=$PWD/target/release/shale-server
[ -x "$bin" ] || cargo build --release --locked -p shale-server
mkdir -p bench-out
out=bench-out/server.csv
echo "round,target,pipeline,test,rps,p50_ms,p99_ms" > "$out"
work=$(mktemp -d /tmp/shale-server-bench.XXXXXX)
port=$((30000 + RANDOM % 10000))
pid=""
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$work"' EXIT

declare -A cmd=(
  [redis-noaof]="redis-server --port {port} --dir {dir} --save '' --appendonly no"
  [redis-aof-everysec]="redis-server --port {port} --dir {dir} --save '' --appendonly yes --appendfsync everysec"
  [shale-leveldb-none]="$bin --port {port} --dir {dir} --design leveldb --sync none"
  [shale-wisckey-none]="$bin --port {port} --dir {dir} --design wisckey --sync none"
  [shale-leveldb-always]="$bin --port {port} --dir {dir} --design leveldb --sync always"
)
targets=(redis-noaof redis-aof-everysec shale-leveldb-none shale-wisckey-none shale-leveldb-always)
IFS=';' read -ra extra <<< "${EXTRA_TARGETS:-}"
for e in "${extra[@]}"; do
  [ -n "$e" ] || continue
  cmd[${e%%=*}]=${e#*=}
  targets+=("${e%%=*}")
done

launch() { # target: start it fresh on $port, set $pid
  local d="$work/$1"
  rm -rf "$d" && mkdir -p "$d"
  local c=${cmd[$1]//\{port\}/$port}
  c=${c//\{dir\}/$d}
  eval "exec $c" >"$d.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 100); do
    redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && return 0
    sleep 0.1
  done
  echo "server-bench: $1 did not start" >&2; cat "$d.log" >&2; exit 1
}
finish() { # stop the target (SHUTDOWN works for both servers) and wait until the port is free
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true   # a front end without SHUTDOWN (the tokio experiment)
  wait "$pid" 2>/dev/null || true
  pid=""
  for _ in $(seq 1 100); do redis-cli -p "$port" ping >/dev/null 2>&1 || return 0; sleep 0.1; done
}
bench() { # round target pipeline [port]
  redis-benchmark -p "${4:-$port}" -t set,get -n "$n" -r 1000000 -d 100 -c 50 -P "$3" --csv 2>/dev/null \
    | awk -F, -v r="$1" -v t="$2" -v p="$3" 'NR > 1 { gsub(/"/, ""); print r "," t "," p "," $1 "," $2 "," $5 "," $7 }' \
    | tee -a "$out"
}

for r in $(seq 1 "$rounds"); do
  k=${#targets[@]}
  for i in $(seq 0 $((k - 1))); do
    t=${targets[$(((i + r - 1) % k))]}
    launch "$t"
    bench "$r" "$t" 1
    bench "$r" "$t" 16
    finish
  done
done

# Scale-out: 3 servers behind nutcracker, then one server direct, alternating.
if command -v nutcracker >/dev/null; then
  for r in $(seq 1 "$rounds"); do
    base=$((port + 100))
    proxy=$(SHALE_SERVER=$bin scripts/cluster.sh start 3 --dir "$work/cluster" --design leveldb \
      --sync none --base-port "$base" --proxy-port $((base + 10)))
    bench "$r" "nutcracker-3x-shale-leveldb-none" 1 "$proxy"
    bench "$r" "nutcracker-3x-shale-leveldb-none" 16 "$proxy"
    SHALE_SERVER=$bin scripts/cluster.sh stop --dir "$work/cluster"
    rm -rf "$work/cluster"
    launch shale-leveldb-none
    bench "$r" "direct-1x-shale-leveldb-none" 1
    bench "$r" "direct-1x-shale-leveldb-none" 16
    finish
  done
fi

python3 - "$out" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
keys = []
for r in rows:
    k = (r["target"], r["pipeline"], r["test"])
    if k not in keys:
        keys.append(k)
base = {}
for (t, p, test) in keys:
    if t == "redis-noaof":
        base[(p, test)] = statistics.median(float(r["rps"]) for r in rows
                                             if (r["target"], r["pipeline"], r["test"]) == (t, p, test))
print("| target | -P | test | ops/s (median) | rounds | vs redis no-AOF | p50 ms | p99 ms |")
print("|---|---|---|---|---|---|---|---|")
for (t, p, test) in sorted(keys, key=lambda k: (int(k[1]), k[2], k[0])):
    sel = [r for r in rows if (r["target"], r["pipeline"], r["test"]) == (t, p, test)]
    rps = statistics.median(float(r["rps"]) for r in sel)
    p50 = statistics.median(float(r["p50_ms"]) for r in sel)
    p99 = statistics.median(float(r["p99_ms"]) for r in sel)
    rel = f"{rps / base[(p, test)]:.2f}x" if (p, test) in base else ""
    allr = "/".join(f"{float(r['rps']) / 1000:.0f}k" for r in sel)
    print(f"| {t} | {p} | {test} | {rps:,.0f} | {allr} | {rel} | {p50:.3f} | {p99:.3f} |")
EOF
