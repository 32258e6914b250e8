# usage: python bench/observer_site_ab.py ROUNDS OLD_SITE_DIR NEW_SITE_DIR
# Each *_SITE_DIR holds a sitecustomize.py (e.g. `git show REV:crates/headroom-core/src/instrument/sitecustomize.py`).
# A listener stands in for Headroom (it reads and drops the events), so only the observer's
# in-process cost is timed: median step of a tiny loop, plain and under each observer,
# inputs given positionally and by keyword, rounds interleaved.
import os, socket, subprocess, sys, tempfile, threading
path = tempfile.mktemp(suffix=".sock")
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); srv.bind(path); srv.listen(8)
def serve():
    while True:
        c, _ = srv.accept()
        def rd(c=c):
            while c.recv(65536): pass
        threading.Thread(target=rd, daemon=True).start()
threading.Thread(target=serve, daemon=True).start()
sites = {"old": sys.argv[2], "new": sys.argv[3]}
res = {}
for r in range(int(sys.argv[1])):
    for which in ["plain", "old", "new"]:
        for mode in ["pos", "kw"]:
            env = dict(os.environ, OMP_NUM_THREADS="1")
            if which != "plain":
                env.update(HEADROOM_EVENTS=path, PYTHONPATH=sites[which])
            out = subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "observer_kwargs_ab_loop.py"), mode], env=env, capture_output=True, text=True)
            res.setdefault((which, mode), []).append(float(out.stdout.strip().splitlines()[-1]))
for k, v in sorted(res.items()):
    v = sorted(v); print(k, "median µs/step", v[len(v)//2], v)
