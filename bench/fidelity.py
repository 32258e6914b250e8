"""Fidelity: Headroom's samples/s against a hand-written PyTorch loop (torch_loop.py, timed with
torch.utils.benchmark) of the same model, batch, dtype and thread count, side by side in one run.

    python bench/fidelity.py --headroom target/release/headroom --device cpu \
        --workloads mlp,cnn --batches 1,16,64 --threads 2 --rounds 2

Rounds alternate Headroom and PyTorch, batch by batch; the best of the rounds is kept for each (throughput under
noise). Prints a Markdown table and writes the raw figures as JSON (--out).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def headroom(args, workload, batches, home):
    cmd = [args.headroom, "sweep", "--device", args.device, "--workload", workload, "--batches", batches,
           "--dtype", args.dtype, "--json"]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    if args.host_inputs:
        cmd += ["--host-inputs"]
    env = dict(os.environ, HEADROOM_HOME=home)
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"headroom failed: {out.stderr}")
    doc = json.loads(out.stdout)
    return {p["batch"]: p["samples_per_s"] for p in doc["points"] if p["status"] == "ok"}


def pytorch(args, workload, batches):
    cmd = [args.python, os.path.join(HERE, "torch_loop.py"), "--device", args.device.replace("cuda:0", "cuda"),
           "--workload", workload, "--batches", batches, "--dtype", args.dtype]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    if args.host_inputs:
        cmd += ["--host-inputs"]
    if args.foreach:
        cmd += ["--foreach"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"torch_loop failed: {out.stderr}")
    rows = [json.loads(l) for l in out.stdout.splitlines() if l.startswith("{")]
    return {r["batch"]: r["samples_per_s"] for r in rows}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--headroom", default="target/release/headroom")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--workloads", default="mlp,cnn")
    ap.add_argument("--batches", default="1,16,64")
    ap.add_argument("--dtype", default="f32")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", default="")
    ap.add_argument("--foreach", action="store_true", help="the PyTorch loop uses AdamW(foreach=True)")
    ap.add_argument("--host-inputs", action="store_true", help="both make inputs on the host, copied every step")
    args = ap.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as home:
        for w in args.workloads.split(","):
            best_h, best_p = {}, {}
            # Interleave per batch and per round so drifting load hits both tools alike.
            for batch in args.batches.split(","):
                for _ in range(args.rounds):
                    for b, v in headroom(args, w, batch, home).items():
                        best_h[b] = max(v, best_h.get(b, 0.0))
                    for b, v in pytorch(args, w, batch).items():
                        best_p[b] = max(v, best_p.get(b, 0.0))
            for b in sorted(best_h):
                if b in best_p:
                    results.append({"workload": w, "batch": b, "headroom": best_h[b], "pytorch": best_p[b],
                                    "ratio": best_h[b] / best_p[b]})
    inputs = "host, copied every step" if args.host_inputs else "made once on the device"
    adamw = "foreach" if args.foreach else "per parameter (as libtorch's C++ AdamW)"
    print(f"device {args.device}, dtype {args.dtype}, threads {args.threads or 'default'}, best of {args.rounds} rounds, "
          f"inputs {inputs}, PyTorch AdamW {adamw}")
    print("| workload | batch | Headroom samples/s | PyTorch samples/s | ratio |")
    print("|---|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['workload']} | {r['batch']} | {r['headroom']:.1f} | {r['pytorch']:.1f} | {r['ratio']:.3f} |")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"args": vars(args), "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
