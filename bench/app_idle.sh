#!/usr/bin/env bash
# Idle footprint of headroom-app with the popover closed: starts it under Xvfb (no tray host,
# window hidden), lets it settle, then samples for a minute the CPU time and resident memory of
# the app and of the WebKit processes it started (its process tree). Prints CPU % of one core and
# RSS. Usage: bash bench/app_idle.sh [seconds]  (after scripts/bootstrap.sh); IDLE_CONFIG='TOML'
# starts it with that config.toml (e.g. IDLE_CONFIG='[app]
# shortcut = ""' for no global shortcut).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-60}
export HEADROOM_HOME="$(mktemp -d)"
if [ -n "${IDLE_CONFIG:-}" ]; then printf '%s\n' "$IDLE_CONFIG" > "$HEADROOM_HOME/config.toml"; fi
BIN="${CARGO_TARGET_DIR:-$PWD/target}/release"
# The whole app in one process (started plain it would become headroom-tray).
export HEADROOM_BIN="$BIN/headroom" HEADROOM_APP_ALONE=1
source bench/proc_tree.sh
xvfb-run -a dbus-run-session -- "$BIN/headroom-app" &
runner=$!
sleep 10
app=$(pgrep -n -x headroom-app)
echo "app pid $app; processes: $(tree "$app" | xargs -I{} cat /proc/{}/comm 2>/dev/null | tr '\n' ' ')"
t0=$(cpu_ticks "$app"); s0=$(date +%s.%N)
peak=0; sum=0; n=0
for _ in $(seq "$SECS"); do
  r=$(rss_kib "$app"); sum=$((sum + r)); n=$((n + 1)); [ "$r" -gt "$peak" ] && peak=$r
  sleep 1
done
t1=$(cpu_ticks "$app"); s1=$(date +%s.%N)
app_only=$(awk '/^VmRSS/ {print $2}' /proc/$app/status)
pss=$(pss_kib "$app")
kill "$app" 2>/dev/null || true
wait "$runner" 2>/dev/null || true
awk -v t0="$t0" -v t1="$t1" -v s0="$s0" -v s1="$s1" -v tick="$tick" -v sum="$sum" -v n="$n" -v peak="$peak" -v app="$app_only" -v pss="$pss" 'BEGIN {
  printf "idle over %.0f s: CPU %.2f %% of one core (app + WebKit processes)\n", s1 - s0, 100 * (t1 - t0) / tick / (s1 - s0);
  printf "RSS: mean %.1f MiB, peak %.1f MiB for the tree (shared pages counted in each process); headroom-app alone %.1f MiB\n", sum / n / 1024, peak / 1024, app / 1024;
  printf "PSS (shared pages split): %.1f MiB for the tree at the end\n", pss / 1024 }'
