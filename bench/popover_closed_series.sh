#!/usr/bin/env bash
# Whether a closed popover's app grows (issue 44): starts headroom-app under Xvfb with its
# popover open, closes it (dropped after HEADROOM_APP_KEEP_POPOVER_S=2), then every minute for
# MINUTES minutes records the PSS and RSS of the app's process tree, the app's own RSS and heap
# (Private_Dirty of its [heap] and anonymous mappings) and the processes in the tree; prints one
# row per minute and the least-squares slope of the tree's PSS in KiB per minute. The Overview's
# background loop samples the machine every 5 s meanwhile, as it does for a user.
# MODE=tray: the same for the two-process menu bar — headroom-tray started, the popover opened and
# closed with the shortcut (its process then ends), the tray process's tree measured.
# Usage, after scripts/bootstrap.sh: [MODE=tray] bash bench/popover_closed_series.sh [MINUTES]
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES=${1:-30}
BIN="${CARGO_TARGET_DIR:-$PWD/target}/release"
export HEADROOM_BIN="$BIN/headroom" HEADROOM_HOME="$(mktemp -d)" HEADROOM_APP_KEEP_POPOVER_S=2
if [ "${MODE:-app}" = tray ]; then
  start="'$BIN/headroom-tray' & app=\$!; sleep 8; xdotool key --clearmodifiers ctrl+shift+h; sleep 5"
else
  start="HEADROOM_APP_ALONE=1 '$BIN/headroom-app' --open & app=\$!; sleep 10"
fi
xvfb-run -a -s "-screen 0 1280x1024x24" dbus-run-session -- bash -c "
  source bench/proc_tree.sh
  $start
  xdotool key --clearmodifiers ctrl+shift+h
  sleep 8
  echo '| minute | tree PSS MiB | tree RSS MiB | app RSS MiB | app anonymous dirty MiB | processes |'
  echo '|---:|---:|---:|---:|---:|---|'
  for m in \$(seq 0 $MINUTES); do
    pss=\$(pss_kib \$app); rss=\$(rss_kib \$app)
    own=\$(awk '/^VmRSS/ {print \$2}' /proc/\$app/status)
    anon=\$(awk '/^[0-9a-f]+-[0-9a-f]+ / {anon = (\$6 == \"\" || \$6 == \"[heap]\")} anon && /^Private_Dirty:/ {s += \$2} END {print s + 0}' /proc/\$app/smaps)
    procs=\$(tree \$app | xargs -I{} cat /proc/{}/comm 2>/dev/null | tr '\n' ' ')
    awk -v m=\$m -v p=\$pss -v r=\$rss -v o=\$own -v a=\$anon -v procs=\"\$procs\" 'BEGIN { printf \"| %d | %.1f | %.1f | %.1f | %.1f | %s |\n\", m, p / 1024, r / 1024, o / 1024, a / 1024, procs }'
    echo \"\$m \$pss\" >> \"\$HEADROOM_HOME/series\"
    [ \"\$m\" -lt $MINUTES ] && sleep 60
  done
  awk '{ n++; sx += \$1; sy += \$2; sxx += \$1 * \$1; sxy += \$1 * \$2 } END {
    b = (n * sxy - sx * sy) / (n * sxx - sx * sx); printf \"slope of the tree PSS: %+.1f KiB per minute over %d samples\n\", b, n }' \"\$HEADROOM_HOME/series\"
  echo 'What the PSS is, at the end: each process, then the largest mappings of the app'
  for p in \$(tree \$app); do
    awk -v c=\"\$(cat /proc/\$p/comm)\" '/^Pss:/ {s += \$2} END {printf \"  %s: %.1f MiB\n\", c, s / 1024}' /proc/\$p/smaps
  done
  awk '/^[0-9a-f]+-[0-9a-f]+ / {name = (\$6 == \"\" ? \"[anonymous]\" : \$6)} /^Pss:/ {pss[name] += \$2} END {for (n in pss) printf \"%.1f %s\n\", pss[n] / 1024, n}' /proc/\$app/smaps | sort -rn | head -12 | sed 's/^/  /'
  kill \$app; wait \$app 2>/dev/null || true
"
rm -rf "$HEADROOM_HOME"
