#!/usr/bin/env bash
# Run every fuzz target for SECONDS seconds each (default 60) and print the executions.
#
#   fuzz/run-all.sh [seconds] [target...]
#
# Works on a stable toolchain: cargo-fuzz needs nightly-only rustc flags (sanitizers,
# coverage instrumentation), which RUSTC_BOOTSTRAP=1 unlocks on stable. Install the driver
# once with `cargo install cargo-fuzz`. New corpus entries go to a scratch directory
# (FUZZ_WORK, default /tmp/shale-fuzz); the checked-in seeds stay as they are. Crashes are
# saved under fuzz/artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-60}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cargo fuzz list)
fi
work=${FUZZ_WORK:-/tmp/shale-fuzz}
export RUSTC_BOOTSTRAP=1
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$work/target}
cargo fuzz build -O
total=0
for t in "${targets[@]}"; do
    mkdir -p "$work/corpus/$t"
    log="$work/$t.log"
    cargo fuzz run -O "$t" "$work/corpus/$t" "corpus/$t" -- \
        -max_total_time="$secs" -rss_limit_mb=2048 -max_len=65536 >"$log" 2>&1 || {
        echo "$t: FAILED (see $log and fuzz/artifacts/$t)"
        tail -30 "$log"
        exit 1
    }
    runs=$(grep -o 'Done [0-9]* runs' "$log" | grep -o '[0-9]*' || echo 0)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo '?')
    echo "$t: $runs executions in ${secs}s, coverage $cov edges, corpus $(ls "$work/corpus/$t" | wc -l)"
    total=$((total + runs))
done
echo "total: $total executions"
