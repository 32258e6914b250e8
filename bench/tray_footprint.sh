#!/usr/bin/env bash
# The menu bar in two processes against the app alone (issue 44), side by side in one run under
# Xvfb and a D-Bus session: each started, opened with the shortcut, closed with it, left closed
# (the popover's keep time 2 s here, a minute by default), then measured over SECS seconds:
# PSS and RSS of the started process's tree, its CPU, the processes in it, and how long the
# shortcut takes to map the popover's window again (for the tray: a new `headroom-app --popover`
# started; for the app alone: its dropped window made again). Usage, after scripts/bootstrap.sh:
#     bash bench/tray_footprint.sh [SECS]
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-20}
BIN="${CARGO_TARGET_DIR:-$PWD/target}/release"
export HEADROOM_BIN="$BIN/headroom" HEADROOM_APP_BIN="$BIN/headroom-app" HEADROOM_APP_KEEP_POPOVER_S=2
measure() {  # label, command
  local label=$1 cmd=$2
  export HEADROOM_HOME="$(mktemp -d)"
  xvfb-run -a -s "-screen 0 1280x1024x24" dbus-run-session -- bash -c "
    source bench/proc_tree.sh
    mapped() { for _ in \$(seq 1000); do xdotool search --onlyvisible --name '^Headroom\$' >/dev/null 2>&1 && return; sleep 0.01; done; }
    $cmd 2>/dev/null & p=\$!
    sleep 8
    a=\$(date +%s%N); xdotool key --clearmodifiers ctrl+shift+h; mapped; b=\$(date +%s%N)
    first=\$(( (b - a) / 1000000 ))
    sleep 4
    xdotool key --clearmodifiers ctrl+shift+h
    sleep 6
    procs=\$(tree \$p | xargs -I{} cat /proc/{}/comm 2>/dev/null | tr '\n' ' ')
    t0=\$(cpu_ticks \$p); s0=\$(date +%s.%N); sleep $SECS; t1=\$(cpu_ticks \$p); s1=\$(date +%s.%N)
    pss=\$(pss_kib \$p); rss=\$(rss_kib \$p)
    a=\$(date +%s%N); xdotool key --clearmodifiers ctrl+shift+h; mapped; b=\$(date +%s%N)
    again=\$(( (b - a) / 1000000 ))
    awk -v m='$label' -v t0=\$t0 -v t1=\$t1 -v s0=\$s0 -v s1=\$s1 -v tick=\$tick -v pss=\$pss -v rss=\$rss -v f=\$first -v r=\$again -v p=\"\$procs\" 'BEGIN {
      printf \"| %s | %.1f | %.1f | %.2f | %d ms | %d ms | %s |\n\", m, pss / 1024, rss / 1024, 100 * (t1 - t0) / tick / (s1 - s0), f, r, p }'
    for c in \$(tree \$p | tac); do kill \$c 2>/dev/null || true; done; wait \$p 2>/dev/null || true
  " 2>/dev/null
  rm -rf "$HEADROOM_HOME"
}
echo "| closed, after one open and close | PSS MiB (tree) | RSS MiB (tree) | CPU % of a core over ${SECS} s | first open, key to window | open again | processes when closed |"
echo "|---|---:|---:|---:|---:|---:|---|"
measure "headroom-tray (two processes)" "'$BIN/headroom-tray'"
measure "headroom-app alone (page dropped)" "env HEADROOM_APP_ALONE=1 '$BIN/headroom-app'"
