#!/usr/bin/env bash
# Installs the .deb that scripts/bundle.sh built into a clean Debian root (debootstrap, minbase,
# no container) and runs Headroom from the installed files alone: `headroom --version`,
# `headroom doctor --json` and a small CPU sweep, with nothing of the build tree or its venv
# reachable (the chroot holds only Debian's minbase, the .deb and what apt installs for it).
# Linux, as root. The Debian root is cached as a tarball (~/.cache/headroom) and copied afresh
# for every run.
#   bash scripts/bundle_test.sh [DEB]
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "bundle_test: FAIL: $*" >&2; exit 1; }
[ "$(uname -s)" = Linux ] && [ "$(id -u)" = 0 ] || fail "needs Linux and root (debootstrap, chroot, mounts)"
deb=${1:-$(ls -t dist/Headroom_*.deb 2>/dev/null | head -1)}
[ -f "$deb" ] || fail "no .deb: run scripts/bundle.sh first"
commit=$(git rev-parse --short=12 HEAD)
export DEBIAN_FRONTEND=noninteractive
command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap >/dev/null
cache=${HEADROOM_CHROOT_CACHE:-$HOME/.cache/headroom/bookworm-minbase.tar}
if [ ! -s "$cache" ]; then
  echo "bundle_test: making a clean Debian 12 root with debootstrap (minbase; once per machine)"
  tmp=$(mktemp -d /tmp/headroom-debootstrap.XXXXXX)
  debootstrap --variant=minbase bookworm "$tmp" http://deb.debian.org/debian >"$tmp.log" 2>&1 \
    || { tail -20 "$tmp.log" >&2; fail "debootstrap failed"; }
  mkdir -p "$(dirname "$cache")"
  tar -C "$tmp" -cf "$cache.part" . && mv "$cache.part" "$cache"
  rm -rf "$tmp" "$tmp.log"
fi
root=$(mktemp -d /tmp/headroom-root.XXXXXX)
xvfb=""
fresh=""
sshdir=""
cleanup() {
  [ -z "$xvfb" ] || kill "$xvfb" 2>/dev/null || true
  if [ -n "$sshdir" ] && [ -s "$sshdir/sshd.pid" ]; then kill "$(cat "$sshdir/sshd.pid")" 2>/dev/null || true; fi
  if [ -n "$fresh" ]; then pkill -u "$fresh" 2>/dev/null || true; userdel -r "$fresh" 2>/dev/null || true; fi
  [ -z "$sshdir" ] || rm -rf "$sshdir"
  for m in tmp/.X11-unix dev/pts dev sys proc; do umount -l "$root/$m" 2>/dev/null || true; done
  rm -rf --one-file-system "$root"
}
trap cleanup EXIT
tar -C "$root" -xf "$cache"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
mount -t sysfs sys "$root/sys"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
in_root() { chroot "$root" env -i HOME=/root PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 "$@"; }

# Nothing of the build is there to be found by accident.
[ ! -e "$root$PWD" ] || fail "the checkout is visible inside the root"
in_root sh -c 'command -v python3' >/dev/null && fail "the clean root has a python3 before the install"

cp "$deb" "$root/tmp/headroom.deb"
echo "bundle_test: apt-get install ./$(basename "$deb") in the clean root (pulls WebKitGTK & co.)"
t0=$(date +%s)
in_root apt-get update -qq
in_root apt-get install -y -qq --no-install-recommends /tmp/headroom.deb >"$root/tmp/apt.log" 2>&1 \
  || { tail -30 "$root/tmp/apt.log" >&2; fail "apt-get install of the .deb failed"; }
echo "bundle_test: installed in $(( $(date +%s) - t0 )) s"

# The package's files: the three binaries, the desktop entry, icons, libtorch beside them.
files=$(in_root dpkg -L headroom)
for want in /usr/bin/headroom /usr/bin/headroom-worker /usr/bin/headroom-app /usr/bin/headroom-tray /usr/lib/headroom/libtorch_cpu.so \
            /usr/lib/headroom/libc10.so /usr/share/doc/headroom/LIBRARIES; do
  grep -qx "$want" <<<"$files" || fail "the package has no $want"
done
grep -q '^/usr/share/applications/.*\.desktop$' <<<"$files" || fail "no desktop entry"
grep -q '^/usr/share/icons/hicolor/.*/apps/.*\.png$' <<<"$files" || fail "no icons"

# rpath: only $ORIGIN-relative, nothing from the build machine.
rp=$(readelf -dW "$root/usr/bin/headroom-worker" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p;s/.*(RPATH).*\[\(.*\)\]/\1/p')
[ "$rp" = '$ORIGIN/../lib/headroom' ] || fail "headroom-worker's rpath is '$rp'"
# `headroom` itself links no libtorch (it starts in milliseconds; the worker loads it).
readelf -dW "$root/usr/bin/headroom" | grep -q "NEEDED.*libtorch\|NEEDED.*libc10" && fail "headroom links libtorch"
for lib in "$root"/usr/lib/headroom/*.so*; do
  r=$(readelf -dW "$lib" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p;s/.*(RPATH).*\[\(.*\)\]/\1/p')
  [ -z "$r" ] || [ "$r" = '$ORIGIN' ] || fail "$(basename "$lib") has rpath '$r'"
done
for bin in /usr/bin/headroom /usr/bin/headroom-worker /usr/bin/headroom-app /usr/bin/headroom-tray; do
  missing=$(in_root ldd "$bin" | grep "not found" || true)
  [ -z "$missing" ] || fail "$bin: $missing"
  in_root ldd "$bin" | grep -E "=> /(work|root|tmp)/" && fail "$bin resolves a library outside the system and the bundle"
done
# ldd's output is read whole first: `ldd | grep -q` under pipefail fails when grep exits at its
# match and ldd, still writing, dies of SIGPIPE (CI saw it fail on a line that was there).
worker_libs=$(in_root ldd /usr/bin/headroom-worker)
for lib in libtorch_cpu.so libc10.so; do
  grep -Eq "$lib => /usr/(bin/\.\./)?lib/headroom/$lib " <<<"$worker_libs" \
    || fail "headroom-worker does not load the bundled $lib: $worker_libs"
done

# Run it from the installed files alone.
v=$(in_root headroom --version)
echo "bundle_test: $v"
grep -q "libtorch 2.11.0" <<<"$v" || fail "--version does not name libtorch 2.11.0: $v"
grep -q "commit $commit" <<<"$v" || fail "--version does not name the commit $commit: $v"
in_root sh -c 'HEADROOM_HOME=/root/hr headroom doctor --json > /tmp/doctor.json' \
  || fail "headroom doctor failed"
in_root sh -c 'HEADROOM_HOME=/root/hr headroom sweep --device cpu --workload mlp --batches 1,4,16 --steps 3 --json > /tmp/sweep.json' \
  || fail "the CPU sweep failed"
python3 - "$root/tmp/doctor.json" "$root/tmp/sweep.json" <<'PY' || fail "the installed headroom's answers are wrong"
import json, sys
doctor = json.load(open(sys.argv[1]))
lt = doctor.get("libtorch") or {}
assert str(lt.get("version", "")).startswith("2.11.0"), f"libtorch facts: {lt}"
cpu = [d for d in lt.get("devices", []) if d.get("device") == "cpu"]
assert cpu and cpu[0].get("matmul_ok"), f"the CPU device check: {lt.get('devices')}"
sweep = json.load(open(sys.argv[2]))
pts = [p for p in sweep["points"] if p["status"] == "ok"]
assert [p["batch"] for p in pts] == [1, 4, 16], sweep["points"]
assert all(p["samples_per_s"] > 0 for p in pts)
print(f"bundle_test: doctor: libtorch {lt['version']}; sweep: "
      + ", ".join(f"{p['batch']}: {p['samples_per_s']:.0f}/s" for p in pts))
PY
# The app from the installed files: it starts (on the host's Xvfb, whose socket alone is shared),
# finds its worker beside itself and keeps running.
if command -v Xvfb >/dev/null; then
  n=77; while [ -e "/tmp/.X11-unix/X$n" ] || [ -e "/tmp/.X$n-lock" ]; do n=$((n + 1)); done
  Xvfb ":$n" -screen 0 1024x768x24 -nolisten tcp >/dev/null 2>&1 &
  xvfb=$!
  for _ in $(seq 50); do [ -e "/tmp/.X11-unix/X$n" ] && break; sleep 0.1; done
  mkdir -p "$root/tmp/.X11-unix"
  mount --bind /tmp/.X11-unix "$root/tmp/.X11-unix"
  # runs_10s WHAT ARGS LOG EXPECTED: the installed app started with ARGS keeps running for 10 s
  # and its log has the line EXPECTED.
  runs_10s() {
    set +e
    in_root sh -c "DISPLAY=:$n HEADROOM_HOME=/root/hr-$3 timeout 10 headroom-app $2 > /tmp/$3.log 2>&1"
    rc=$?
    set -e
    [ "$rc" = 124 ] || { cat "$root/tmp/$3.log" >&2; fail "headroom-app $1 exited ($rc) instead of running"; }
    grep -q "$4" "$root/tmp/$3.log" || { cat "$root/tmp/$3.log" >&2; fail "headroom-app $1: no '$4' in its log"; }
  }
  runs_10s "--open" --open app "workers from /usr/bin/headroom$"
  echo "bundle_test: headroom-app ran 10 s from the package, workers from /usr/bin/headroom"
  # Started plain, as its desktop entry starts it, the app becomes the menu bar without WebKit.
  runs_10s "started plain" "" tray "headroom-tray: ready"
  echo "bundle_test: headroom-app started plain ran 10 s as headroom-tray"
else
  echo "bundle_test: no Xvfb here; the app's start was not tried"
fi
# The wizard's fourth step from the installed files: Headroom carried to a fresh machine. A user
# made for the test with an empty home stands for the rented Mac, behind an sshd on 127.0.0.1
# that the root reaches over the network it shares with this machine. The step copies
# /usr/bin/headroom, the worker and /usr/lib/headroom to ~/.headroom there; the copy must then
# run from that home alone (the worker's rpath is $ORIGIN/../lib/headroom).
if command -v useradd >/dev/null && [ -x /usr/sbin/sshd ]; then
  fresh="hr-bundle-$$"
  # No password ('*', not the locked '!' that sshd without PAM refuses): its key alone opens it.
  useradd -m -s /bin/sh -p '*' "$fresh"
  sshdir=$(mktemp -d /tmp/headroom-sshd.XXXXXX)
  ssh-keygen -q -t ed25519 -N '' -f "$sshdir/hostkey"
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  printf '%s\n' "Port $port" "ListenAddress 127.0.0.1" "HostKey $sshdir/hostkey" "PidFile $sshdir/sshd.pid" \
    "AuthorizedKeysFile .ssh/authorized_keys" "PasswordAuthentication no" "KbdInteractiveAuthentication no" \
    "PubkeyAuthentication yes" "StrictModes no" "UsePAM no" > "$sshdir/sshd_config"
  mkdir -p /run/sshd
  /usr/sbin/sshd -f "$sshdir/sshd_config" -E "$sshdir/sshd.log" || fail "sshd did not start"
  in_root apt-get install -y -qq --no-install-recommends openssh-client rsync >"$root/tmp/apt-ssh.log" 2>&1 \
    || { tail -20 "$root/tmp/apt-ssh.log" >&2; fail "apt-get install openssh-client rsync in the root failed"; }
  in_root ssh-keygen -q -t ed25519 -N '' -f /root/wizard_key
  install -d -m 700 -o "$fresh" -g "$fresh" "/home/$fresh/.ssh"
  install -m 600 -o "$fresh" -g "$fresh" "$root/root/wizard_key.pub" "/home/$fresh/.ssh/authorized_keys"
  in_root sh -c 'mkdir -p /root/proj && echo "print(1)" > /root/proj/train.py'
  in_root sh -c "export HEADROOM_HOME=/root/hr
    headroom project add proj --dir /root/proj -- python train.py --batch-size {batch} >/dev/null &&
    headroom remote add fresh --host 127.0.0.1 --port $port --user $fresh --identity /root/wizard_key >/dev/null &&
    headroom remote migrate fresh --project proj --json > /tmp/migrate.json 2>/tmp/migrate.log; true"
  python3 - "$root/tmp/migrate.json" "$fresh" <<'PY' || { cat "$root/tmp/migrate.log" "$sshdir/sshd.log" >&2; fail "the wizard did not carry Headroom there"; }
import json, sys
v = json.load(open(sys.argv[1]))
ran = {r["step"]: r for r in v["ran"]}
for step in ("host", "key", "check", "headroom"):
    assert ran.get(step, {}).get("passed"), f"{step}: {ran.get(step)}"
detail = ran["headroom"]["detail"]
assert f"/home/{sys.argv[2]}/.headroom/bin/headroom" in detail, detail
print(f"bundle_test: wizard step 4 from the package: {detail}")
PY
  grep -q "copied 100 %" "$root/tmp/migrate.log" || { cat "$root/tmp/migrate.log" >&2; fail "no copy progress was said"; }
  there="/home/$fresh/.headroom"
  [ -f "$there/lib/headroom/libtorch_cpu.so" ] || fail "libtorch was not copied to $there/lib/headroom"
  worker_libs=$(su -s /bin/sh -c "ldd $there/bin/headroom-worker" "$fresh")
  grep -q "libtorch_cpu.so => $there/bin/../lib/headroom/libtorch_cpu.so\|libtorch_cpu.so => $there/lib/headroom/libtorch_cpu.so" <<<"$worker_libs" \
    || fail "the copied worker does not load the copied libtorch: $worker_libs"
  v=$(su -s /bin/sh -c "$there/bin/headroom --version" "$fresh")
  grep -q "libtorch 2.11.0" <<<"$v" || fail "the copied headroom answers: $v"
  su -s /bin/sh -c "HEADROOM_HOME=/home/$fresh/hr $there/bin/headroom sweep --device cpu --workload mlp --batches 1,4 --steps 3 --json > /home/$fresh/sweep.json" "$fresh" \
    || fail "a CPU sweep from the copy failed"
  python3 - "/home/$fresh/sweep.json" <<'PY' || fail "the copy's sweep is wrong"
import json, sys
pts = [p for p in json.load(open(sys.argv[1]))["points"] if p["status"] == "ok"]
assert [p["batch"] for p in pts] == [1, 4], pts
print("bundle_test: the copy there swept " + ", ".join(f"{p['batch']}: {p['samples_per_s']:.0f}/s" for p in pts))
PY
else
  echo "bundle_test: no useradd or sshd here; the wizard's copy from the package was not tried"
fi
in_root test -s /root/hr/ledger.sqlite3 || in_root sh -c 'ls /root/hr/*.sqlite* >/dev/null 2>&1' || fail "no ledger written"
echo "bundle_test: passed ($(du -h "$deb" | cut -f1) .deb; $(du -sh "$root/usr/lib/headroom" | cut -f1) of libraries installed)"
