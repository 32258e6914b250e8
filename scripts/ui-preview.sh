#!/usr/bin/env bash
# Light and dark screenshots of every tab of the popover (400 × 640, as the app's window), in a
# plain Chromium with the UI's mock backend and the tests' fixtures: the quick look at a style
# change; the real window is scripts/e2e.sh's. Needs `npm ci` in ui/ and chromium.
#     bash scripts/ui-preview.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/../ui"
out=${1:-../target/ui-preview}
mkdir -p "$out"
out=$(cd "$out" && pwd)
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$browser" ] || { echo "ui-preview: no chromium on PATH (apt-get install chromium)" >&2; exit 1; }
npx vite --port 5174 --strictPort >/dev/null 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  curl -sf http://127.0.0.1:5174/tests/preview/index.html >/dev/null && break
  sleep 0.2
done
for scheme in light dark; do
  flags=()
  [ "$scheme" = dark ] && flags=(--force-dark-mode --blink-settings=preferredColorScheme=0)
  for tab in overview readiness sweep memory runs remote settings; do
    "$browser" --headless=new --no-sandbox --disable-gpu --hide-scrollbars "${flags[@]}" \
      --window-size=400,640 --virtual-time-budget=3000 \
      --screenshot="$out/$tab-$scheme.png" "http://127.0.0.1:5174/tests/preview/index.html#$tab" \
      >/dev/null 2>&1
  done
done
ls "$out"
