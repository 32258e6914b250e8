#!/usr/bin/env bash
# Type-checks and lints the whole workspace for aarch64-apple-darwin on a Linux machine, so the
# macOS code (`cfg(target_os = "macos")`) is compiled by the compiler, not only read by people:
#   cargo check  --workspace --all-targets --target aarch64-apple-darwin
#   cargo clippy --workspace --all-targets --target aarch64-apple-darwin -- -D warnings
# Nothing is linked or run. What it needs, all kept in its own cache folder (nothing system-wide
# changes; HEADROOM_MACOS_CACHE moves it):
#   - the Rust standard library's source matching the installed rustc exactly (Debian's `rust-src`
#     package of that version, fetched with a private apt configuration from the same mirror as
#     the system's), placed in a hard-linked private copy of the toolchain, so `-Zbuild-std` can
#     build std for the target;
#   - a venv with `ziglang` (PyPI) as the C/C++ compiler for build scripts (bundled SQLite,
#     libtorch's and Headroom's C++ shims), behind a wrapper that drops Apple-clang flags zig
#     rejects; zig has no Apple framework headers, so the Objective-C of the notification plugin
#     (mac-notification-sys) becomes an empty object and is not checked;
#   - the headers of PyPI's macOS arm64 torch wheel, for torch-sys and Headroom's allocator shim.
# On macOS itself the ordinary `cargo clippy` of scripts/test.sh already is this check.
# Idempotent: a second run only re-checks what changed (its target folder lives in the cache).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
TARGET=aarch64-apple-darwin
TORCH_VERSION=2.11.0
ZIG_VERSION=0.17.1
CACHE=${HEADROOM_MACOS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/headroom/macos-check}
say() { echo "check-macos: $*"; }
fail() { echo "check-macos: $*" >&2; exit 1; }

if [ "$(uname -s)" = Darwin ]; then
  say "on macOS the ordinary clippy of scripts/test.sh is this check; nothing to do"
  exit 0
fi
command -v rustc >/dev/null || fail "rustc is missing; install Rust from https://rustup.rs"
mkdir -p "$CACHE"
RUST_VERSION=$(rustc --version | awk '{print $2}')
SYSROOT=$(rustc --print sysroot)
PY=${PYTHON:-python3}

# 1. The std source of exactly this rustc, from Debian's rust-src package.
SRC="$CACHE/rust-src-$RUST_VERSION"
if [ ! -f "$SRC/library/Cargo.lock" ]; then
  command -v apt-get >/dev/null || fail "apt-get is missing: the std source for rustc $RUST_VERSION comes from Debian's rust-src package; on another system place rustc's 'library' folder at $SRC/library"
  mirror=${HEADROOM_DEBIAN_MIRROR:-}
  if [ -z "$mirror" ]; then
    mirror=$(
      { cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '/^URIs:/ {for (i = 2; i <= NF; i++) print $i}'
        awk '$1 == "deb" {for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) {print $i; break}}' /etc/apt/sources.list 2>/dev/null
      } | grep -E '/debian/?$' | head -n 1 || true)
  fi
  [ -n "$mirror" ] || fail "no Debian mirror found in /etc/apt/sources.list(.d); set HEADROOM_DEBIAN_MIRROR=http://…/debian"
  apt_dir="$CACHE/apt"
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/etc"
  keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  # The backports of the next Debian release carry rust-src for current rustc versions
  # (bookworm's own is 1.63); override with HEADROOM_RUST_SRC_SUITE.
  suite=${HEADROOM_RUST_SRC_SUITE:-trixie-backports}
  echo "deb [signed-by=$keyring] $mirror $suite main" > "$apt_dir/etc/sources.list"
  apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/etc/sources.list" -o Dir::Etc::SourceParts=/dev/null
            -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
            -o "Dir::State::status=/dev/null" -o Debug::NoLocking=1 -o APT::Architecture=amd64
            -o Acquire::Languages=none -o "APT::Sandbox::User=$(id -un)")
  say "fetching the std source for rustc $RUST_VERSION (Debian rust-src, $suite from $mirror)"
  apt-get "${apt_opts[@]}" -qq update || fail "apt-get update of $suite from $mirror failed (see above)"
  version=$(apt-cache "${apt_opts[@]}" show rust-src 2>/dev/null | awk '/^Version:/ {print $2}' \
              | grep -E "^${RUST_VERSION//./\\.}\+" | head -n 1 || true)
  [ -n "$version" ] || fail "Debian's $suite has no rust-src $RUST_VERSION (it has: $(apt-cache "${apt_opts[@]}" show rust-src 2>/dev/null | awk '/^Version:/ {printf "%s ", $2}')); install a rustc that one of those matches, or set HEADROOM_RUST_SRC_SUITE"
  deb_dir="$CACHE/deb"
  rm -rf "$deb_dir" && mkdir -p "$deb_dir"
  (cd "$deb_dir" && apt-get "${apt_opts[@]}" -qq download "rust-src=$version") \
    || fail "could not download rust-src=$version"
  rm -rf "$deb_dir/x" && dpkg-deb -x "$deb_dir"/rust-src_*.deb "$deb_dir/x"
  lib=$(find "$deb_dir/x/usr/src" -maxdepth 2 -type d -name library | head -n 1)
  [ -n "$lib" ] && [ -f "$lib/Cargo.lock" ] || fail "rust-src=$version holds no library/Cargo.lock"
  rm -rf "$SRC" && mkdir -p "$SRC" && mv "$lib" "$SRC/library"
  rm -rf "$deb_dir"
fi

# 2. A private copy of the toolchain (hard links) with that source in it.
TOOLCHAIN="$CACHE/toolchain-$RUST_VERSION"
if [ ! -x "$TOOLCHAIN/bin/rustc" ] || [ ! -d "$TOOLCHAIN/lib/rustlib/src/rust/library" ]; then
  say "making a private copy of the $RUST_VERSION toolchain"
  [ -x "$SYSROOT/bin/cargo-clippy" ] || fail "clippy is missing from $SYSROOT: rustup component add clippy"
  rm -rf "$TOOLCHAIN"
  cp -al "$SYSROOT" "$TOOLCHAIN" 2>/dev/null || cp -a "$SYSROOT" "$TOOLCHAIN"
  mkdir -p "$TOOLCHAIN/lib/rustlib/src/rust"
  rm -rf "$TOOLCHAIN/lib/rustlib/src/rust/library"
  cp -a "$SRC/library" "$TOOLCHAIN/lib/rustlib/src/rust/library"
fi

# 3. zig as the C/C++ compiler, and the macOS torch wheel's headers.
VENV="$CACHE/venv"
if ! "$VENV/bin/python" -c "import ziglang" 2>/dev/null; then
  say "installing ziglang==$ZIG_VERSION into $VENV"
  "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --disable-pip-version-check --quiet "ziglang==$ZIG_VERSION"
fi
ZIG=$("$VENV/bin/python" -c 'import ziglang, os; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))')
[ -x "$ZIG" ] || fail "the ziglang package has no zig binary at $ZIG"
LIBTORCH="$CACHE/libtorch-macos-$TORCH_VERSION"
if [ ! -f "$LIBTORCH/include/torch/torch.h" ] && [ ! -f "$LIBTORCH/include/torch/csrc/api/include/torch/torch.h" ]; then
  say "fetching the headers of torch==$TORCH_VERSION for macosx arm64 (an 80 MB wheel)"
  wheel_dir="$CACHE/wheel"
  rm -rf "$wheel_dir" && mkdir -p "$wheel_dir"
  "$VENV/bin/python" -m pip download --disable-pip-version-check --quiet --no-deps --only-binary=:all: \
    --platform macosx_14_0_arm64 --python-version 3.11 -d "$wheel_dir" "torch==$TORCH_VERSION"
  rm -rf "$LIBTORCH.tmp" && mkdir -p "$LIBTORCH.tmp"
  "$VENV/bin/python" - "$wheel_dir" "$LIBTORCH.tmp" <<'PY'
import glob, os, sys, zipfile
wheel = glob.glob(os.path.join(sys.argv[1], "torch-*.whl"))[0]
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith(("torch/include/", "torch/lib/")) or name == "torch/version.py":
            z.extract(name, sys.argv[2])
PY
  rm -rf "$LIBTORCH" && mv "$LIBTORCH.tmp/torch" "$LIBTORCH" && rm -rf "$LIBTORCH.tmp" "$wheel_dir"
fi

# The compiler wrapper: zig for aarch64-macos, minus the flags cc-rs passes for Apple's clang that
# zig rejects; the third-party sources that need Apple's frameworks become empty objects.
BIN="$CACHE/bin"
mkdir -p "$BIN"
for tool in cc c++; do
  cat > "$BIN/zig-$tool" <<EOF
#!/usr/bin/env bash
# Generated by scripts/check-macos.sh: $tool for aarch64-macos through zig.
set -euo pipefail
# cc-rs asks \`-?\` to tell MSVC apart; zig would compile nothing into ./a.o: answer as clang does.
[ "\$*" = "-?" ] && { echo "clang: error: no input files" >&2; exit 1; }
# \`zig cc --version\` also leaves an empty a.o in the current folder: ask it elsewhere.
if [ "\$*" = "--version" ]; then
  d=\$(mktemp -d); rc=0
  (cd "\$d" && exec "$ZIG" $tool -target aarch64-macos --version) || rc=\$?
  rm -rf "\$d"; exit \$rc
fi
args=(); out=""; skip=0; stub=0; prev=""
for a in "\$@"; do
  if [ \$skip = 1 ]; then skip=0; continue; fi
  case "\$a" in
    -arch|-target) skip=1; continue ;;
    --target=*|-mmacosx-version-min=*|-mmacos-version-min=*) continue ;;
    *.m|*.mm) case "\$PWD" in *mac-notification-sys*) stub=1 ;; esac ;;
  esac
  [ "\$prev" = -o ] && out="\$a"
  prev="\$a"; args+=("\$a")
done
if [ \$stub = 1 ] && [ -n "\$out" ]; then
  # Needs Cocoa's headers, which zig does not have: nothing is linked in a check, so an empty
  # object stands in (this file is not checked).
  exec "$ZIG" cc -target aarch64-macos -c -x c /dev/null -o "\$out"
fi
exec "$ZIG" $tool -target aarch64-macos "\${args[@]}"
EOF
  chmod +x "$BIN/zig-$tool"
done
cat > "$BIN/zig-ar" <<EOF
#!/usr/bin/env bash
exec "$ZIG" ar "\$@"
EOF
chmod +x "$BIN/zig-ar"

# 4. Check and lint. The target folder is the cache's own: a macOS build never mixes with Linux's.
export PATH="$TOOLCHAIN/bin:$PATH"
export RUSTC="$TOOLCHAIN/bin/rustc" RUSTDOC="$TOOLCHAIN/bin/rustdoc" RUSTC_BOOTSTRAP=1
export CARGO_TARGET_DIR="$CACHE/target"
export CC_aarch64_apple_darwin="$BIN/zig-cc" CXX_aarch64_apple_darwin="$BIN/zig-c++" AR_aarch64_apple_darwin="$BIN/zig-ar"
export LIBTORCH
unset LIBTORCH_USE_PYTORCH LIBTORCH_INCLUDE LIBTORCH_LIB RUSTC_WRAPPER RUSTC_WORKSPACE_WRAPPER
unset RUSTUP_TOOLCHAIN
cd "$ROOT"
common=(--locked --workspace --all-targets --target "$TARGET" -Zbuild-std=std,panic_abort)
start=$(date +%s)
say "cargo check ${common[*]}"
"$TOOLCHAIN/bin/cargo" check "${common[@]}" --quiet
say "cargo clippy ${common[*]} -- -D warnings"
"$TOOLCHAIN/bin/cargo" clippy "${common[@]}" --quiet -- -D warnings
say "ok: the workspace type-checks and passes clippy for $TARGET ($(( $(date +%s) - start )) s)"
