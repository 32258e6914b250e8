#!/usr/bin/env bash
# The long, coverage-guided fuzz runs (not part of .ci/run, which replays the corpus and runs a
# seeded mutation loop on stable — see crates/headroom-core/tests/core/fuzz.rs):
#
#     bash fuzz/run.sh [SECONDS_PER_TARGET]     # default 60
#
# Needs rustup's nightly toolchain; installs cargo-fuzz from crates.io when missing. Each target
# starts from its kept corpus (fuzz/corpus/<target>, where new finds are written and then
# minimised) plus the captured fixtures, and prints libFuzzer's execution count. A crash stops
# the script with the input under fuzz/artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET=${1:-60}
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
mkdir -p target
for t in ${TARGETS:-protocol config macos linux sshconfig}; do
  mkdir -p "fuzz/corpus/$t"
  log="target/fuzz-$t.log"
  (cd fuzz && cargo +nightly fuzz run "$t" "corpus/$t" ../crates/headroom-core/tests/fixtures -- \
      -max_total_time="$SECONDS_PER_TARGET" -max_len=65536 -print_final_stats=1) > "$log" 2>&1 || {
    echo "$t: FAILED (see $log and fuzz/artifacts/$t/)"; tail -30 "$log"; exit 1; }
  runs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || echo "?")
  cov=$(grep -Eo 'cov: [0-9]+' "$log" | tail -1 || true)
  (cd fuzz && cargo +nightly fuzz cmin "$t" "corpus/$t" >/dev/null 2>&1) || true
  # The repo keeps the small inputs only (the replay in the test command reads them all); the
  # large ones come back from the seeds in the next long run.
  find "fuzz/corpus/$t" -type f -size +1024c ! -name 'seed-*' ! -name 'crash-*' -delete
  echo "$t: $runs executions in ${SECONDS_PER_TARGET}s, $cov, corpus kept $(ls "fuzz/corpus/$t" | wc -l) files"
done
