#!/usr/bin/env bash
# Sets up everything Headroom needs to build on a fresh Linux or macOS machine: a project-local
# Python venv (.venv) with torch==2.11.0 from PyPI — the libtorch that tch 0.24 expects — and a
# release build of `headroom` linked against it (rpath, so no LD_LIBRARY_PATH is needed).
# Idempotent: a second run only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
TORCH_VERSION=2.11.0

command -v cargo >/dev/null || { echo "bootstrap: cargo is missing; install Rust from https://rustup.rs" >&2; exit 1; }
PY=${PYTHON:-python3}
command -v "$PY" >/dev/null || { echo "bootstrap: $PY is missing; install Python 3.10 or newer" >&2; exit 1; }

if [ ! -x .venv/bin/python ]; then
  echo "bootstrap: creating .venv with $($PY --version)"
  "$PY" -m venv .venv
fi
if ! .venv/bin/python - "$TORCH_VERSION" <<'PY' 2>/dev/null
import sys, torch
sys.exit(0 if torch.__version__.split("+")[0] == sys.argv[1] else 1)
PY
then
  echo "bootstrap: installing torch==$TORCH_VERSION into .venv (a few GB on Linux, about a minute)"
  .venv/bin/python -m pip install --disable-pip-version-check --quiet "torch==$TORCH_VERSION"
fi

export VIRTUAL_ENV="$PWD/.venv" PATH="$PWD/.venv/bin:$PATH" LIBTORCH_USE_PYTORCH=1
echo "bootstrap: building headroom (release; the first build takes several minutes)"
cargo build --release --locked -p headroom-cli
echo "bootstrap: ready: target/release/headroom"
