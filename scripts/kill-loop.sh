#!/usr/bin/env bash
# kill -9 loop: run `shale stress` on one store, kill it with SIGKILL at a random moment,
# verify with --verify-only, and repeat. Prints the number of cycles verified.
#
#   scripts/kill-loop.sh [cycles] [store-dir]
#
# Defaults: 200 cycles, a fresh directory under /tmp. SHALE_BIN selects the binary (default:
# a release build of this checkout). The kill moment is a random delay of 0.05-2 s after the
# start, so it lands anywhere: during recovery, verification, writes, flushes, compactions.
# Extra stress options can be passed in STRESS_ARGS (e.g. "--threads 8 --keys 50000").
set -euo pipefail
cycles=${1:-200}
dir=${2:-$(mktemp -d /tmp/shale-kill-loop.XXXXXX)}
root=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${SHALE_BIN:-}" ]; then
    cargo build --release -q -p shale-cli --manifest-path "$root/Cargo.toml"
    SHALE_BIN="${CARGO_TARGET_DIR:-$root/target}/release/shale"
fi
db="$dir/db"
args=(--db "$db" --keys 5000 --write-buffer-size 65536 ${STRESS_ARGS:-})
verified=0
for ((i = 1; i <= cycles; i++)); do
    "$SHALE_BIN" stress "${args[@]}" --ops 1000000000 --seed "$i" --progress-every 1000000 \
        >"$dir/run.log" 2>&1 &
    pid=$!
    # 50..2000 ms
    ms=$((50 + RANDOM % 1951))
    sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
    if ! kill -9 "$pid" 2>/dev/null; then
        echo "cycle $i: stress exited before the kill:"
        cat "$dir/run.log"
        exit 1
    fi
    wait "$pid" 2>/dev/null || true
    if ! out=$("$SHALE_BIN" stress "${args[@]}" --verify-only 2>&1); then
        echo "cycle $i: verification failed after a kill at ${ms} ms:"
        echo "$out"
        echo "store kept in $dir"
        exit 1
    fi
    verified=$((verified + 1))
    if ((i % 10 == 0)); then
        echo "cycle $i: ${out%%$'\n'*}"
    fi
done
echo "$verified kill -9 cycles verified (store: $db)"
