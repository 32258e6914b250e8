#!/usr/bin/env bash
# What the popover costs once closed (issue 44), side by side in one run under Xvfb: the app
# never opened; opened then closed with its webview kept (what every close did before); opened
# then closed with its webview dropped (HEADROOM_APP_KEEP_POPOVER_S=2 here, a minute by
# default); then the same three with GTK's GL off (`GDK_GL=disable`, issue 44's experiment).
# For each: PSS and RSS of the app's process tree and its CPU over SECS seconds while closed;
# for the dropped ones also how long the shortcut takes to map the popover again (the window on
# screen; the page draws a moment later). Usage, after scripts/bootstrap.sh:
#     bash bench/popover_footprint.sh [SECS]
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-20}
BIN="${CARGO_TARGET_DIR:-$PWD/target}/release"
# The whole app in one process (started plain it would become headroom-tray).
export HEADROOM_BIN="$BIN/headroom" HEADROOM_APP_ALONE=1
source bench/proc_tree.sh
shown() { xdotool search --onlyvisible --name '^Headroom$' >/dev/null 2>&1; }
measure() {  # mode, keep seconds, open at start, [env assignments for the app]
  local mode=$1 keep=$2 open=$3 extra=${4:-}
  export HEADROOM_HOME="$(mktemp -d)" HEADROOM_APP_KEEP_POPOVER_S=$keep
  env $extra xvfb-run -a -s "-screen 0 1280x1024x24" dbus-run-session -- bash -c "
    '$BIN/headroom-app' $open & app=\$!
    sleep 10
    if [ -n '$open' ]; then xdotool key --clearmodifiers ctrl+shift+h; sleep $((keep < 100 ? keep + 3 : 3)); fi
    source bench/proc_tree.sh
    procs=\$(tree \$app | xargs -I{} cat /proc/{}/comm 2>/dev/null | tr '\n' ' ')
    t0=\$(cpu_ticks \$app); s0=\$(date +%s.%N); sleep $SECS; t1=\$(cpu_ticks \$app); s1=\$(date +%s.%N)
    pss=\$(pss_kib \$app); rss=\$(rss_kib \$app)
    reopen=''
    if [ '${mode%-no-gdk-gl}' = dropped ]; then
      a=\$(date +%s%N); xdotool key --clearmodifiers ctrl+shift+h
      for _ in \$(seq 500); do xdotool search --onlyvisible --name '^Headroom\$' >/dev/null 2>&1 && break; sleep 0.01; done
      b=\$(date +%s%N); reopen=\$(( (b - a) / 1000000 ))
    fi
    awk -v m='$mode' -v t0=\$t0 -v t1=\$t1 -v s0=\$s0 -v s1=\$s1 -v tick=\$(getconf CLK_TCK) -v pss=\$pss -v rss=\$rss -v r=\"\$reopen\" -v p=\"\$procs\" 'BEGIN {
      printf \"| %s | %.1f | %.1f | %.2f | %s | %s |\n\", m, pss / 1024, rss / 1024, 100 * (t1 - t0) / tick / (s1 - s0), (r == \"\" ? \"-\" : r \" ms\"), p }'
    kill \$app; wait \$app 2>/dev/null || true
  "
  rm -rf "$HEADROOM_HOME"
}
echo "| closed popover | PSS MiB (tree) | RSS MiB (tree) | CPU % of a core over ${SECS} s | shortcut to the window mapped again | processes |"
echo "|---|---:|---:|---:|---:|---|"
measure never 60 ""
measure kept 100000 --open
measure dropped 2 --open
# The same with GTK's GL off: no libLLVM at start (see bench/README.md, "GTK without GL").
measure never-no-gdk-gl 60 "" GDK_GL=disable
measure kept-no-gdk-gl 100000 --open GDK_GL=disable
measure dropped-no-gdk-gl 2 --open GDK_GL=disable
