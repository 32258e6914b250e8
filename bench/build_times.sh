#!/usr/bin/env bash
# Issue 40's build figures: wall time of an incremental `cargo build --release` of the two
# binaries after touching one decide rule (headroom-decide since the second split, headroom-model after the first; headroom-core
# before) and after touching the worker's step loop (headroom-torch), and the stripped size of
# headroom-worker. Run from the repository root
# after a full build (scripts/bootstrap.sh); prints one Markdown table row per figure.
set -euo pipefail
target="${CARGO_TARGET_DIR:-target}"
build() { cargo build --release -p headroom-cli --bins >/dev/null 2>&1; }
build
time_after_touch() {
  touch "$1"
  local t0 t1
  t0=$(date +%s.%N)
  build
  t1=$(date +%s.%N)
  python3 -c "print(f'{$t1 - $t0:.1f}')"
}
decide=$(time_after_touch crates/headroom-decide/src/rules.rs)
step=$(time_after_touch crates/headroom-torch/src/measure.rs)
strip -o /tmp/headroom-worker.stripped "$target/release/headroom-worker"
size=$(stat -c %s /tmp/headroom-worker.stripped)
rm -f /tmp/headroom-worker.stripped
echo "| after touching a decide rule | ${decide} s |"
echo "| after touching headroom-torch/src/measure.rs | ${step} s |"
echo "| headroom-worker, stripped | $((size / 1024)) KiB |"
