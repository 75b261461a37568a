#!/usr/bin/env bash
# shale-server against real clients, run by .ci/run (about two minutes):
#   redis-cli and redis-benchmark (Debian's redis-tools), redis-py with RESP2 and RESP3,
#   bad input (garbage, huge lengths, half-sent commands, 1000 connections), a kill -9
#   under redis-benchmark load with --sync always that must lose no acknowledged write,
#   and 3 servers behind twemproxy (nutcracker) with every key on exactly one server.
# Installs what it needs (apt-get, pip in a venv). Everything listens on loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "== server-ci: $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

# --- tools -------------------------------------------------------------------------------
need=()
command -v redis-cli >/dev/null && command -v redis-benchmark >/dev/null || need+=(redis-tools)
command -v nutcracker >/dev/null || need+=(nutcracker)
. scripts/apt-install.sh
[ ${#need[@]} -eq 0 ] || apt_install "${need[@]}"
work=$(mktemp -d /tmp/shale-server-ci.XXXXXX)
venv=${SHALE_CI_VENV:-/tmp/shale-server-ci-venv}
if ! "$venv/bin/python" -c "import redis" 2>/dev/null; then
  say "redis-py into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q 'redis>=5'
fi
py() { "$venv/bin/python" -W ignore::DeprecationWarning scripts/server_clients.py "$@"; }

cargo build --release --locked -p shale-server
bin=$PWD/target/release/shale-server
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  SHALE_SERVER=$bin scripts/cluster.sh stop --dir "$work/cluster" || true
  rm -rf "$work"
}
trap cleanup EXIT

# Below Linux's ephemeral range (32768-60999): the benchmark steps leave client sockets
# on ports there, and a server or proxy started later on one of them fails to bind (a CI
# run once found "nothing answers on port 36958" at the twemproxy step).
port=$((20000 + RANDOM % 10000))
start() { # dir sync...: start a server on $port, set $pid
  "$bin" --dir "$1" --port "$port" --sync "$2" "${@:3}" >>"$work/server.log" 2>&1 &
  pid=$!
  pids+=("$pid")
  for _ in $(seq 1 100); do
    redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && return 0
    sleep 0.1
  done
  cat "$work/server.log" >&2
  fail "server did not start"
}
stop() { # SIGTERM and wait: must exit 0
  kill -TERM "$pid"
  wait "$pid" || fail "server exited with $? after SIGTERM"
}
expect() { # want, command...: the command's output must be `want`
  local want=$1; shift
  local got
  got=$("$@" 2>&1) || true
  [ "$got" = "$want" ] || fail "$*: got [$got], want [$want]"
}

# --- redis-cli -----------------------------------------------------------------------------
say "redis-cli"
start "$work/cli" always
cli=(redis-cli -p "$port")
expect PONG "${cli[@]}" ping
expect OK "${cli[@]}" set greeting "hello world"
expect "hello world" "${cli[@]}" get greeting
expect 1 "${cli[@]}" incr visits
expect 12 "${cli[@]}" append greeting "!"
expect "" "${cli[@]}" get missing
expect "ERR unknown command 'frob', with args beginning with: 'x' " "${cli[@]}" frob x
expect "ERR wrong number of arguments for 'get' command" "${cli[@]}" get
expect OK "${cli[@]}" set t v ex 100
expect 100 "${cli[@]}" ttl t
expect "$(printf 'OK\n2\n2')" sh -c "printf 'SET a 1\nINCR a\nGET a\n' | ${cli[*]}"
expect "proto 3" sh -c "${cli[*]} -3 hello 3 | grep '^proto'"
"${cli[@]}" command docs get | grep -q "Returns the string value of a key" || fail "COMMAND DOCS"
"${cli[@]}" info server | grep -q "^redis_version:" || fail "INFO"
# Mass insertion with --pipe (the raw protocol, as Redis's docs teach it).
for i in $(seq 1 5000); do printf '*3\r\n$3\r\nSET\r\n$%d\r\nmass:%d\r\n$1\r\nv\r\n' $((5 + ${#i})) "$i"; done \
  | "${cli[@]}" --pipe | tee "$work/pipe.out" | grep -q "errors: 0, replies: 5000" || { cat "$work/pipe.out"; fail "--pipe"; }
expect 5000 sh -c "${cli[*]} --scan --pattern 'mass:*' | wc -l"

# --- redis-benchmark -----------------------------------------------------------------------
say "redis-benchmark"
for p in 1 16; do
  redis-benchmark -p "$port" -t ping,set,get,incr,mset -n 20000 -r 10000 -c 20 -P "$p" -q \
    >"$work/bench.out" 2>&1 || fail "redis-benchmark -P $p"
  grep -qi "error" "$work/bench.out" && { cat "$work/bench.out"; fail "redis-benchmark reported errors"; }
  tail -n +1 "$work/bench.out" | tr '\r' '\n' | grep "requests per second" | sed 's/^/   /'
done
keys=$("${cli[@]}" dbsize)
[ "$keys" -gt 5000 ] || fail "DBSIZE $keys after the benchmark"

# --- redis-py, RESP2 and RESP3 -------------------------------------------------------------
say "redis-py"
py redis-py "$port" 2
py redis-py "$port" 3

# --- bad input -----------------------------------------------------------------------------
say "bad input"
py bad-input "$port" "$pid"
stop

# --- kill -9 under load --------------------------------------------------------------------
say "kill -9 under redis-benchmark load, --sync always"
start "$work/kill" always
redis-benchmark -p "$port" -t set,incr -n 100000000 -r 100000 -d 100 -c 20 -q >/dev/null 2>&1 &
bench=$!
py writer "$port" 60 >"$work/acked" &
writer=$!
sleep 3
kill -9 "$pid"
wait "$writer" || true
kill "$bench" 2>/dev/null || true
wait "$bench" 2>/dev/null || true
acked=$(cat "$work/acked")
[ "$acked" -gt 0 ] || fail "the writer had nothing acknowledged"
start "$work/kill" always
py check-writer "$port" "$acked"
stop

# --- scale-out -----------------------------------------------------------------------------
say "3 servers behind twemproxy"
base=$((port + 10))
proxy=$(SHALE_SERVER=$bin scripts/cluster.sh start 3 --dir "$work/cluster" --base-port "$base" \
  --proxy-port $((base + 5)))
py cluster "$proxy" "$base" $((base + 1)) $((base + 2))
SHALE_SERVER=$bin scripts/cluster.sh stop --dir "$work/cluster"
say "all passed"
