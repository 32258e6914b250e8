#!/usr/bin/env bash
# The memory floor of a menu-bar process that does not link WebKit (issue 44): builds
# bench/tray_floor (a tray icon, a menu, a global shortcut, a sampler thread) and measures its
# PSS and CPU under Xvfb, with GTK's GL on (as GTK starts by default) and off (GDK_GL=disable,
# as in issue 44's experiment), beside the app never opened with GTK's GL off too. Prints the largest
# mappings. Usage, after scripts/bootstrap.sh: bash bench/tray_floor.sh [SECS]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/proc_tree.sh
if [ "${1:-}" = --inner ]; then  # --inner SECS LABEL PROGRAM: one measurement, on a display
  set +o pipefail  # `head` below may close its pipe before `sort` is done
  secs=$2 label=$3 prog=$4
  HEADROOM_HOME=$(mktemp -d) "$prog" 2>/dev/null & p=$!
  sleep 10
  t0=$(cpu_ticks "$p"); s0=$(date +%s.%N); sleep "$secs"; t1=$(cpu_ticks "$p"); s1=$(date +%s.%N)
  pss=$(pss_kib "$p")
  top=$(awk '/^[0-9a-f]+-[0-9a-f]+ /{n=$6} /^Pss:/{a[n]+=$2} END{for (k in a) print a[k], k}' \
    "/proc/$p/smaps" | sort -rn | head -4 |
    awk '{n=$2; sub(".*/", "", n); if (n == "") n = "anonymous"; printf "%s%s %.1f", (NR > 1 ? ", " : ""), n, $1 / 1024}')
  kill "$p"; wait "$p" 2>/dev/null || true
  awk -v l="$label" -v t0="$t0" -v t1="$t1" -v s0="$s0" -v s1="$s1" -v tick="$tick" -v pss="$pss" -v top="$top" 'BEGIN {
    printf "| %s | %.1f | %.2f | %s |\n", l, pss / 1024, 100 * (t1 - t0) / tick / (s1 - s0), top }'
  exit 0
fi
SECS=${1:-20}
TARGET="${CARGO_TARGET_DIR:-$PWD/target}/tray-floor"
cargo build --release --manifest-path bench/tray_floor/Cargo.toml --target-dir "$TARGET" >&2
measure() {  # label, GDK_GL value (empty: unset), program
  env ${2:+GDK_GL=$2} xvfb-run -a -s "-screen 0 1280x1024x24" dbus-run-session -- \
    bash bench/tray_floor.sh --inner "$SECS" "$1" "$3" 2>/dev/null | grep '^|'
}
echo "| process | PSS MiB | CPU % of a core over ${SECS} s | largest mappings, MiB |"
echo "|---|---:|---:|---|"
measure "tray only, GTK's GL on" "" "$TARGET/release/tray-floor"
measure "tray only, GDK_GL=disable" disable "$TARGET/release/tray-floor"
APP="${CARGO_TARGET_DIR:-$PWD/target}/release/headroom-app"
# The whole app in one process (started plain it would become headroom-tray).
export HEADROOM_APP_ALONE=1
if [ -x "$APP" ]; then
  export HEADROOM_BIN="${CARGO_TARGET_DIR:-$PWD/target}/release/headroom"
  measure "headroom-app never opened, GDK_GL=disable" disable "$APP"
fi
