#!/usr/bin/env bash
# Headroom's main job from a fresh checkout: set up, then a readiness summary and a quick CPU sweep.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
headroom="${CARGO_TARGET_DIR:-$PWD/target}/release/headroom"
# doctor exits 1 when a light is red; say so and go on to the sweep.
"$headroom" doctor || echo "(doctor found a red light above; the CPU sweep runs anyway)"
"$headroom" sweep --device cpu --workload mlp --max-batch 256
"$headroom" ledger list --limit 5
