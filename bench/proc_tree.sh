# Shell helpers the app benchmarks share: a process and its descendants, their CPU ticks,
# resident and proportional set sizes (KiB). Source it.
tick=$(getconf CLK_TCK)
tree() {  # pid and its descendants
  local p=$1
  echo "$p"
  for c in $(cat /proc/"$p"/task/*/children 2>/dev/null); do tree "$c"; done
}
cpu_ticks() { local t=0; for p in $(tree "$1"); do
  [ -r /proc/$p/stat ] && t=$((t + $(awk '{print $14 + $15}' /proc/$p/stat))); done; echo $t; }
rss_kib() { local r=0; for p in $(tree "$1"); do
  v=$(awk '/^VmRSS/ {print $2}' /proc/$p/status 2>/dev/null || echo 0); r=$((r + ${v:-0})); done; echo $r; }
pss_kib() { local r=0; for p in $(tree "$1"); do
  v=$(awk '/^Pss:/ {print $2}' /proc/$p/smaps_rollup 2>/dev/null || echo 0); r=$((r + ${v:-0})); done; echo $r; }
