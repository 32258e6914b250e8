#!/usr/bin/env bash
# The app end to end in its real window: tauri-driver + WebKitWebDriver drive `headroom-app
# --open` under Xvfb and a D-Bus session. Expects scripts/bootstrap.sh to have run (it installs
# Xvfb and WebKitWebDriver on Linux). Screenshots land in target/e2e/.
set -euo pipefail
cd "$(dirname "$0")/.."
# LIBTORCH_USE_PYTORCH only has to be set; its value is the venv so that torch-sys (which
# reruns its build script when this variable changes, not when PATH does) rebuilds against this
# clone's torch when a target dir is shared between clones.
export VIRTUAL_ENV="$PWD/.venv" PATH="$PWD/.venv/bin:$PATH" LIBTORCH_USE_PYTORCH="$PWD/.venv"
if [ "$(uname -s)" != Linux ]; then
  echo "e2e: WebKitWebDriver runs the app on Linux only (macOS has no WebDriver for WKWebView); skipped" >&2
  exit 0
fi
DRIVER="$(command -v tauri-driver || true)"
if [ -z "$DRIVER" ]; then
  echo "e2e: installing tauri-driver (cargo install)"
  cargo install tauri-driver --locked --quiet
  DRIVER="${CARGO_HOME:-$HOME/.cargo}/bin/tauri-driver"
fi
export HEADROOM_E2E_TAURI_DRIVER="$DRIVER"
BIN="${CARGO_TARGET_DIR:-$PWD/target}/release"
export HEADROOM_E2E_APP="$BIN/headroom-app"
export HEADROOM_E2E_TRAY="$BIN/headroom-tray"
export HEADROOM_E2E_WORKER="$BIN/headroom"
export HEADROOM_E2E_VENV="$PWD/.venv"
export HEADROOM_E2E_OUT="${CARGO_TARGET_DIR:-$PWD/target}/e2e"
rm -rf "$HEADROOM_E2E_OUT"
runner=(cargo test --release --locked -p headroom-e2e --test app -- --ignored --nocapture --test-threads=1)
if cargo nextest --version >/dev/null 2>&1; then
  runner=(cargo nextest run --release --locked -p headroom-e2e --run-ignored only --no-capture --test-threads 1)
fi
xvfb-run -a -s "-screen 0 1280x1024x24" dbus-run-session -- "${runner[@]}"
echo "e2e: passed; screenshots in $HEADROOM_E2E_OUT"
