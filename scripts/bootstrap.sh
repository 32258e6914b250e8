#!/usr/bin/env bash
# Sets up everything Headroom needs to build on a fresh Linux or macOS machine: a project-local
# Python venv (.venv) with torch==2.11.0 from PyPI — the libtorch that tch 0.24 expects —, a
# release build of `headroom` linked against it (rpath, so no LD_LIBRARY_PATH is needed), the
# app's system libraries (Linux, apt), its UI (npm) and the app `headroom-app`.
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
  # torch with its CUDA libraries is about 4.7 GB installed on Linux, and pip unpacks it in the
  # temporary folder first: say so plainly instead of failing half-way with ENOSPC.
  need_kb=$((8 * 1024 * 1024))
  for d in .venv "${TMPDIR:-/tmp}"; do
    free_kb=$(df -Pk "$d" | awk 'NR==2 {print $4}')
    if [ -n "$free_kb" ] && [ "$free_kb" -lt "$need_kb" ]; then
      echo "bootstrap: only $((free_kb / 1024)) MiB free under $d; installing torch needs about 8 GiB there. Free some space (old clones, build folders) and run this again." >&2
      exit 1
    fi
  done
  echo "bootstrap: installing torch==$TORCH_VERSION into .venv (a few GB on Linux, about a minute)"
  .venv/bin/python -m pip install --disable-pip-version-check --quiet "torch==$TORCH_VERSION"
fi

# MLX for `sweep --compare mlx`: on Linux its CPU build (mlx[cpu], about 11 MB) runs the MLX side
# on the CPU, which is how the comparison is tested here; on an Apple Silicon Mac, plain mlx.
MLX_VERSION=0.32.4
if ! .venv/bin/python -c "import mlx.core" 2>/dev/null; then
  case "$(uname -s)/$(uname -m)" in
    Linux/*) mlx_req="mlx[cpu]==$MLX_VERSION" ;;
    Darwin/arm64) mlx_req="mlx==$MLX_VERSION" ;;
    *) mlx_req="" ;;
  esac
  if [ -n "$mlx_req" ]; then
    echo "bootstrap: installing $mlx_req into .venv"
    .venv/bin/python -m pip install --disable-pip-version-check --quiet "$mlx_req"
  fi
fi

# The app (Tauri) needs WebKitGTK and an appindicator on Linux; the end-to-end test needs Xvfb,
# D-Bus, WebKitWebDriver, a notification server (dunst, whose buttons it clicks) and xdotool (it presses the global shortcut on the X server and sees whether the popover is shown); `headroom remote` needs OpenSSH's client, and its tests start their
# own OpenSSH server on 127.0.0.1; `remote migrate` copies a project with rsync; reports draw their PNG charts' labels with a system font
# (fonts-dejavu-core); the test of a progress bar drawn live under `headroom run` runs it in tmux; the tray's icon is looked for in a real X system tray (trayer) with xwininfo (x11-utils). macOS has WebKit, OpenSSH, rsync and fonts built in.
if [ "$(uname -s)" = Linux ]; then
  APT_PACKAGES=(libwebkit2gtk-4.1-dev libayatana-appindicator3-dev librsvg2-dev pkg-config xvfb dbus webkit2gtk-driver xdotool openssh-client openssh-server rsync dunst fonts-dejavu-core tmux trayer x11-utils)
  missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
      echo "bootstrap: installing ${missing[*]} (apt)"
      export DEBIAN_FRONTEND=noninteractive
      apt-get update -qq
      apt-get install -y -qq "${missing[@]}" >/dev/null
    else
      echo "bootstrap: the app needs these packages: sudo apt-get install ${missing[*]}" >&2
      exit 1
    fi
  fi
  # sshd's privilege-separation folder (the tests' sshd needs it; no service is started).
  if [ "$(id -u)" = 0 ]; then mkdir -p /run/sshd; fi
fi

command -v npm >/dev/null || { echo "bootstrap: npm is missing; install Node.js 20 or newer" >&2; exit 1; }
echo "bootstrap: building the UI (ui/, Vite)"
(cd ui && npm ci --no-audit --no-fund --loglevel=error && npm run --silent build)

# LIBTORCH_USE_PYTORCH only has to be set; its value is the venv so that torch-sys (which
# reruns its build script when this variable changes, not when PATH does) rebuilds against this
# clone's torch when a target dir is shared between clones.
export VIRTUAL_ENV="$PWD/.venv" PATH="$PWD/.venv/bin:$PATH" LIBTORCH_USE_PYTORCH="$PWD/.venv"
echo "bootstrap: building headroom, headroom-app and headroom-tray (release; the first build takes several minutes)"
cargo build --release --locked -p headroom-cli -p headroom-app -p headroom-tray
echo "bootstrap: ready: target/release/headroom, target/release/headroom-app, target/release/headroom-tray"
