#!/usr/bin/env bash
# Headroom's main job from a fresh checkout: set up, then a readiness summary and a quick CPU sweep.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
./target/release/headroom doctor
./target/release/headroom sweep --device cpu --workload mlp --max-batch 256
./target/release/headroom ledger list --limit 5
