#!/usr/bin/env bash
# Builds Headroom's installable bundle, libtorch inside, so that neither the app nor `headroom`
# needs a checkout or a Python venv:
#   Linux: dist/Headroom_<version>_<arch>[_cuda].deb — /usr/bin/headroom-app, /usr/bin/headroom,
#          /usr/bin/headroom-worker and /usr/bin/headroom-tray (the menu bar without WebKit, which
#          a plain start of the app becomes; Tauri sidecars), the icons and desktop entry, and the
#          libtorch libraries `headroom-worker` links (it is the only binary that does) in
#          /usr/lib/headroom, found through an rpath of $ORIGIN/../lib/headroom.
#   macOS: Headroom.app and a .dmg — `headroom`, `headroom-worker` and `headroom-tray` in Contents/MacOS beside
#          the app, the libtorch dylibs in Contents/Frameworks, found through
#          @rpath = @executable_path/../Frameworks.
# HEADROOM_BUNDLE_FLAVOUR=cpu (default: libtorch's CPU libraries only, no libtorch_cuda) or cuda
# (Linux: also libtorch_cuda and the CUDA, cuDNN, NCCL… libraries it needs; several GB).
# macOS signing: ad hoc (`codesign --sign -`) unless APPLE_SIGNING_IDENTITY names a Developer ID
# ("Developer ID Application: …", in the keychain, or imported by tauri from APPLE_CERTIFICATE
# and APPLE_CERTIFICATE_PASSWORD); then every binary and dylib is signed with it, with the
# hardened runtime and a timestamp, as notarisation requires. With APPLE_ID, APPLE_PASSWORD (an
# app-specific password) and APPLE_TEAM_ID, or APPLE_API_KEY, APPLE_API_ISSUER and
# APPLE_API_KEY_PATH, tauri notarises the app and this script submits the .dmg to `notarytool`
# and staples the ticket to it.
# HEADROOM_SKIP_BOOTSTRAP=1 when bootstrap.sh has just run. The app is built for the bundle in
# its own target folder (HEADROOM_BUNDLE_TARGET_DIR, default <target>/headroom-bundle), so the
# checkout's target/release binaries are never touched.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${HEADROOM_SKIP_BOOTSTRAP:-}" = 1 ] || bash scripts/bootstrap.sh
TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
flavour=${HEADROOM_BUNDLE_FLAVOUR:-cpu}
case "$flavour" in cpu|cuda) ;; *) echo "bundle: HEADROOM_BUNDLE_FLAVOUR must be cpu or cuda, not '$flavour'" >&2; exit 2 ;; esac
TORCH_LIB=$(.venv/bin/python -c 'import importlib.util, os; print(os.path.join(importlib.util.find_spec("torch").submodule_search_locations[0], "lib"))')
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
triple=$(rustc -vV | sed -n 's/^host: //p')
stage=dist/bundle
rm -rf "$stage"
mkdir -p "$stage/sidecar" "$stage/lib"
cli="$stage/sidecar/headroom-$triple"
sidecar="$stage/sidecar/headroom-worker-$triple"
tray="$stage/sidecar/headroom-tray-$triple"
cp "$TARGET_DIR/release/headroom" "$cli"
cp "$TARGET_DIR/release/headroom-worker" "$sidecar"
cp "$TARGET_DIR/release/headroom-tray" "$tray"
chmod 755 "$cli" "$sidecar" "$tray"
# The bundle's build has a target folder of its own: `tauri build` copies the sidecars (the
# patched headroom-worker, RUNPATH $ORIGIN/../lib/headroom) beside the app it builds, which in
# the development target folder would replace the worker every `headroom sweep` of the checkout
# runs; and the bundle's configuration would recompile the development build's crates and back.
BUNDLE_TARGET_DIR=${HEADROOM_BUNDLE_TARGET_DIR:-$TARGET_DIR/headroom-bundle}
export CARGO_TARGET_DIR="$BUNDLE_TARGET_DIR"
tauri=ui/node_modules/.bin/tauri

case "$(uname -s)" in
Linux)
  if ! command -v patchelf >/dev/null; then
    if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq patchelf >/dev/null
    else
      echo "bundle: patchelf is missing: sudo apt-get install patchelf" >&2; exit 1
    fi
  fi
  strip "$cli" "$sidecar" "$tray"
  # The build links libtorch_cuda on purpose (so CUDA works from a venv); the CPU bundle drops
  # it: the worker calls nothing in it directly, it only registers the CUDA backend.
  if [ "$flavour" = cpu ]; then patchelf --remove-needed libtorch_cuda.so "$sidecar"; fi
  # The only rpath: the bundle's own library folder (the build's points into .venv).
  patchelf --set-rpath '$ORIGIN/../lib/headroom' "$sidecar"
  python3 scripts/bundle_libs.py "$sidecar" "$TORCH_LIB" "$stage/lib" --flavour "$flavour"
  for f in "$stage"/lib/*; do patchelf --set-rpath '$ORIGIN' "$f"; done
  echo "bundle: building the .deb (tauri build; recompiles headroom-app with the bundle's configuration)"
  "$tauri" build --no-bundle --config src-tauri/bundle/linux.conf.json
  # The release profile keeps line tables for backtraces (170 MB); the package does not need them.
  strip "$BUNDLE_TARGET_DIR/release/headroom-app"
  "$tauri" bundle --bundles deb --config src-tauri/bundle/linux.conf.json
  deb=$(ls -t "$BUNDLE_TARGET_DIR"/release/bundle/deb/*.deb | head -1)
  suffix=""; [ "$flavour" = cuda ] && suffix="_cuda"
  out="dist/Headroom_${version}_$(dpkg --print-architecture 2>/dev/null || uname -m)${suffix}.deb"
  cp "$deb" "$out"
  echo "bundle: $out ($(du -h "$out" | cut -f1); installed: $(du -sh "$stage/lib" | cut -f1) of libraries, see $stage/LIBRARIES)"
  ;;
Darwin)
  # Untested here (no Mac in this project's machines); see docs/bundles.md.
  build_rpath=$(otool -l "$sidecar" | awk '/LC_RPATH/ {getline; getline; print $2}' | grep -F "$TORCH_LIB" || true)
  for r in $build_rpath; do install_name_tool -delete_rpath "$r" "$sidecar"; done
  install_name_tool -add_rpath @executable_path/../Frameworks "$sidecar"
  identity=${APPLE_SIGNING_IDENTITY:--}
  if [ "$identity" = - ]; then
    sign() { codesign --force --sign - "$@"; }
    echo "bundle: signing ad hoc (set APPLE_SIGNING_IDENTITY for a Developer ID)"
  else
    sign() { codesign --force --options runtime --timestamp --sign "$identity" "$@"; }
    echo "bundle: signing with $identity, hardened runtime"
  fi
  sign "$sidecar" "$cli" "$tray"
  for name in libtorch.dylib libtorch_cpu.dylib libc10.dylib libomp.dylib; do
    cp "$TORCH_LIB/$name" "$stage/lib/$name"
    chmod 644 "$stage/lib/$name"
    install_name_tool -id "@rpath/$name" "$stage/lib/$name"
    # Each finds its siblings in Contents/Frameworks through @loader_path.
    otool -l "$stage/lib/$name" | grep -q "path @loader_path " || install_name_tool -add_rpath @loader_path "$stage/lib/$name"
    sign "$stage/lib/$name"
  done
  "$tauri" build --bundles app,dmg --config src-tauri/bundle/macos.conf.json
  dmg=$(ls -t "$BUNDLE_TARGET_DIR"/release/bundle/dmg/*.dmg | head -1)
  # The .dmg itself notarised and stapled where the credentials are set (tauri notarises the
  # .app inside it).
  if [ "$identity" != - ] && [ -n "${APPLE_ID:-}" ] && [ -n "${APPLE_PASSWORD:-}" ] && [ -n "${APPLE_TEAM_ID:-}" ]; then
    sign "$dmg"
    xcrun notarytool submit "$dmg" --apple-id "$APPLE_ID" --password "$APPLE_PASSWORD" --team-id "$APPLE_TEAM_ID" --wait
    xcrun stapler staple "$dmg"
  elif [ "$identity" != - ] && [ -n "${APPLE_API_KEY:-}" ] && [ -n "${APPLE_API_ISSUER:-}" ] && [ -n "${APPLE_API_KEY_PATH:-}" ]; then
    sign "$dmg"
    xcrun notarytool submit "$dmg" --key "$APPLE_API_KEY_PATH" --key-id "$APPLE_API_KEY" --issuer "$APPLE_API_ISSUER" --wait
    xcrun stapler staple "$dmg"
  else
    echo "bundle: the .dmg is not notarised (no Developer ID and notarytool credentials set)"
  fi
  out="dist/Headroom_${version}_$(uname -m).dmg"
  cp "$dmg" "$out"
  echo "bundle: $out ($(du -h "$out" | cut -f1)); the app: $(ls -d "$BUNDLE_TARGET_DIR"/release/bundle/macos/*.app)"
  ;;
*) echo "bundle: no bundle for $(uname -s)" >&2; exit 1 ;;
esac
