#!/usr/bin/env bash
# Every check and test of the project from a fresh checkout: set up, format, lints (also for
# macOS, type-checked from Linux by scripts/check-macos.sh), docs, the
# Rust tests, the UI's unit tests (vitest) and the app end to end in its real window (Xvfb).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
# The frameworks the observer is tested against (HF Trainer, Lightning, accelerate), as test
# dependencies in the same venv.
.venv/bin/python -m pip install --disable-pip-version-check --quiet -r tests/requirements.txt
# LIBTORCH_USE_PYTORCH only has to be set; its value is the venv so that torch-sys (which
# reruns its build script when this variable changes, not when PATH does) rebuilds against this
# clone's torch when a target dir is shared between clones.
export VIRTUAL_ENV="$PWD/.venv" PATH="$PWD/.venv/bin:$PATH" LIBTORCH_USE_PYTORCH="$PWD/.venv"
export HEADROOM_TEST_PYTHON="$PWD/.venv/bin/python"
# Tests must never write to the user's real data folder.
export HEADROOM_HOME="$(mktemp -d)/must-not-be-used"
cargo fmt --all --check
cargo clippy --release --locked --workspace --all-targets -- -D warnings
# The macOS code (cfg(target_os = "macos")) type-checked and linted for aarch64-apple-darwin; on
# a Mac the clippy above already is that check.
if [ "$(uname -s)" = Linux ]; then
  bash scripts/check-macos.sh
fi
RUSTDOCFLAGS="-D warnings" cargo doc --release --locked --workspace --no-deps --quiet
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --release --locked --workspace --no-fail-fast
else
  cargo test --release --locked --workspace --no-fail-fast
fi
(cd ui && npm test --silent)
bash scripts/e2e.sh
# The installable bundle: build the .deb and run it from a clean Debian root (needs root on Linux).
if [ "$(uname -s)" = Linux ] && [ "$(id -u)" = 0 ]; then
  # The bundle builds in a target folder of its own: the checkout's worker stays as it was.
  worker="${CARGO_TARGET_DIR:-$PWD/target}/release/headroom-worker"
  before=$(sha256sum "$worker")
  HEADROOM_SKIP_BOOTSTRAP=1 bash scripts/bundle.sh
  if [ "$(sha256sum "$worker")" != "$before" ]; then
    echo "test: scripts/bundle.sh changed the checkout's $worker (it must build in its own target folder)" >&2
    exit 1
  fi
  bash scripts/bundle_test.sh
else
  echo "test: the bundle install test (scripts/bundle_test.sh) needs root on Linux; skipped"
fi
if [ -e "$HEADROOM_HOME" ]; then
  echo "test: a test wrote to the default HEADROOM_HOME ($HEADROOM_HOME); tests must use their own temp folder" >&2
  exit 1
fi
echo "test: all checks passed"
