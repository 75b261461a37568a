#!/usr/bin/env bash
# Start or stop N shale-servers behind twemproxy (Debian's `nutcracker`) on loopback.
#
#   scripts/cluster.sh start N [options]   start N servers and the proxy; print the proxy port
#   scripts/cluster.sh stop [--dir DIR]    SIGTERM every process of the cluster, wait for them
#
# Options of start:
#   --dir DIR          where stores, config, logs and pids go   (default /tmp/shale-cluster)
#   --base-port P      servers listen on P, P+1, ...            (default 7000)
#   --proxy-port P     nutcracker listens here                  (default 22121)
#   --design NAME      design preset of every server            (default: engine defaults)
#   --sync MODE        always|batch|none                        (default always)
#   --requirepass PW   password of every server; the proxy authenticates with it
#
# The binary is $SHALE_SERVER, else target/release/shale-server (build it first:
# cargo build --release -p shale-server). See docs/scale-out.md.
set -euo pipefail

usage() { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

cmd=${1:-}; [ -n "$cmd" ] || usage; shift
dir=/tmp/shale-cluster
n=0
base_port=7000
proxy_port=22121
design=""
sync=always
pass=""
if [ "$cmd" = start ]; then
  n=${1:-}; [[ "$n" =~ ^[1-9][0-9]*$ ]] || usage; shift
fi
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir=$2; shift 2 ;;
    --base-port) base_port=$2; shift 2 ;;
    --proxy-port) proxy_port=$2; shift 2 ;;
    --design) design=$2; shift 2 ;;
    --sync) sync=$2; shift 2 ;;
    --requirepass) pass=$2; shift 2 ;;
    *) usage ;;
  esac
done

root=$(cd "$(dirname "$0")/.." && pwd)
bin=${SHALE_SERVER:-$root/target/release/shale-server}

wait_port() { # port: wait until something answers PING there
  for _ in $(seq 1 100); do
    if redis-cli -p "$1" ${pass:+--no-auth-warning -a "$pass"} ping 2>/dev/null | grep -q PONG; then return 0; fi
    sleep 0.1
  done
  echo "cluster.sh: nothing answers on port $1" >&2; return 1
}

case "$cmd" in
start)
  command -v nutcracker >/dev/null || { echo "cluster.sh: nutcracker not found (apt-get install nutcracker)" >&2; exit 1; }
  [ -x "$bin" ] || { echo "cluster.sh: $bin not found (cargo build --release -p shale-server)" >&2; exit 1; }
  mkdir -p "$dir"
  : > "$dir/pids"
  servers=""
  for i in $(seq 0 $((n - 1))); do
    port=$((base_port + i))
    "$bin" --dir "$dir/node$i" --port "$port" --sync "$sync" \
      ${design:+--design "$design"} ${pass:+--requirepass "$pass"} \
      </dev/null >"$dir/node$i.log" 2>&1 &
    echo $! >> "$dir/pids"
    servers="$servers   - 127.0.0.1:$port:1 node$i"$'\n'
  done
  # ketama: consistent hashing, so adding a server moves about 1/N of the keys. The names
  # (node0, ...) are what ketama hashes: keep them when a server moves to a new address.
  cat > "$dir/nutcracker.yml" <<EOF
shale:
  listen: 127.0.0.1:$proxy_port
  hash: murmur
  distribution: ketama
  redis: true
${pass:+  redis_auth: $pass
}  timeout: 5000
  preconnect: true
  auto_eject_hosts: false
  servers:
$servers
EOF
  for i in $(seq 0 $((n - 1))); do wait_port $((base_port + i)); done
  nutcracker -c "$dir/nutcracker.yml" -o "$dir/nutcracker.log" -s $((proxy_port + 1)) \
    -p "$dir/nutcracker.pid" </dev/null >/dev/null 2>&1 &
  echo $! >> "$dir/pids"
  wait_port "$proxy_port"
  echo "$proxy_port"
  ;;
stop)
  [ -f "$dir/pids" ] || exit 0
  pids=$(cat "$dir/pids")
  for p in $pids; do kill -TERM "$p" 2>/dev/null || true; done
  for p in $pids; do
    for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  done
  rm -f "$dir/pids"
  ;;
*) usage ;;
esac
