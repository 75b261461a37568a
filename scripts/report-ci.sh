#!/usr/bin/env bash
# shale report in a real browser, run by .ci/run (under a minute once Chromium is there):
# two tiny benchmarks write JSON lines and a report each, `shale report` draws both side by
# side, and headless Chromium (Debian's package) loads the page offline: its DOM must hold
# every chart of every design, it must take a screenshot, and it must log no page error.
# Installs chromium with apt-get when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "== report-ci: $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

# --- tools -------------------------------------------------------------------------------
browser=""
for b in chromium chromium-browser; do
  command -v "$b" >/dev/null && { browser=$b; break; }
done
if [ -z "$browser" ]; then
  . scripts/apt-install.sh
  apt_install chromium
  browser=chromium
fi

cargo build --release --locked -p shale-cli
shale=$PWD/target/release/shale
work=$(mktemp -d /tmp/shale-report-ci.XXXXXX)
trap 'rm -rf "$work"' EXIT

# --- reports -----------------------------------------------------------------------------
designs=(leveldb wisckey)
charts=5
for d in "${designs[@]}"; do
  "$shale" bench --design "$d" --num 20000 --benchmarks fillrandom,readrandom,compact,stats \
    --db "$work/db-$d" --json "$work/$d.json" --report "$work/report-$d" >/dev/null
  [ -s "$work/report-$d/report.html" ] || fail "bench --report wrote no $work/report-$d/report.html"
done
"$shale" report "$work/leveldb.json" "$work/wisckey.json" --out "$work/both" >/dev/null
page=$work/both/report.html
[ -s "$page" ] || fail "shale report wrote no $page"

# --- the browser -------------------------------------------------------------------------
# --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
flags=(--headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run
       --enable-logging=stderr --v=0)
say "$browser --dump-dom"
timeout 120 "$browser" "${flags[@]}" --dump-dom "file://$page" >"$work/dom.html" 2>"$work/dom.log" \
  || { cat "$work/dom.log" >&2; fail "$browser exited with an error loading $page"; }
svgs=$(grep -o '<svg' "$work/dom.html" | wc -l || true)
want=$(( ${#designs[@]} * charts ))
[ "$svgs" -eq "$want" ] || fail "the browser's DOM has $svgs <svg> elements, expected $want"
for d in "${designs[@]}"; do
  n=$(grep -o "<figcaption>$d</figcaption>" "$work/dom.html" | wc -l || true)
  [ "$n" -eq "$charts" ] || fail "$d: $n charts in the DOM, expected $charts"
done
grep -q '</html>' "$work/dom.html" || fail "the DOM dump is cut short"

say "$browser --screenshot"
timeout 120 "$browser" "${flags[@]}" --window-size=1250,2600 --screenshot="$work/report.png" \
  "file://$page" >/dev/null 2>"$work/shot.log" \
  || { cat "$work/shot.log" >&2; fail "$browser could not take a screenshot"; }
size=$(stat -c %s "$work/report.png" 2>/dev/null || echo 0)
[ "$size" -gt 20000 ] || fail "screenshot is $size bytes: the page drew (almost) nothing"

# Page errors (a console message, a resource that failed to load, a renderer crash); the
# container's missing D-Bus and GPU are not the page's and are ignored.
if grep -hE 'CONSOLE|Uncaught|net::ERR_|Failed to load|crash' "$work/dom.log" "$work/shot.log" \
     | grep -vE 'dbus|DBus|gpu|GPU|crashpad' >"$work/errors.txt"; then
  cat "$work/errors.txt" >&2
  fail "the browser reported errors on the page"
fi
say "ok: $svgs charts for ${designs[*]}, screenshot $size bytes"
