"""Close to the limit: Headroom's `matmul` and `copy` workloads against PyTorch's own operation at
the same size, dtype and device, side by side in one run.

  * matmul: `headroom sweep --workload matmul --mode infer` (each sample an N×N matrix times a
    learned N×N weight, inputs made on the device) against `torch.matmul` of the same (B, N, N) ×
    (N, N) product timed with torch.utils.benchmark: TFLOP/s counting 2·N³ per sample. The training
    step (`--mode train`, 4·N³ per sample: forward plus the weight gradient, then AdamW) is listed
    beside it for reference.
  * copy: `headroom sweep --workload copy --mode infer` (a device copy of N values per sample)
    against `y.copy_(x)` of the same tensor: GB/s counting the bytes read plus the bytes written.

    python bench/close_to_limit.py --headroom dist/headroom --device cuda --dtype bf16 \
        --matmul-n 8192 --matmul-batches 1,4,16 --copy-len 268435456 --copy-batches 1,4
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ELEM = {"f32": 4, "f16": 2, "bf16": 2}


def headroom(args, home, workload, shape, batches, mode, dtype):
    cmd = [args.headroom, "sweep", "--device", args.device, "--workload", workload, "--input-shape", str(shape),
           "--batches", batches, "--mode", mode, "--dtype", dtype, "--json"]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    out = subprocess.run(cmd, env=dict(os.environ, HEADROOM_HOME=home), capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"headroom failed: {out.stderr[-2000:]}")
    return {p["batch"]: p for p in json.loads(out.stdout)["points"] if p["status"] == "ok"}


def pytorch(args, op, n, batches, dtype):
    code = f"""
import json, torch, torch.utils.benchmark as benchmark
if {args.threads}: torch.set_num_threads({args.threads})
dev = torch.device({args.device.replace('cuda:0', 'cuda')!r})
dt = {{'f32': torch.float32, 'f16': torch.float16, 'bf16': torch.bfloat16}}[{dtype!r}]
for b in [{batches}]:
    if {op!r} == 'matmul':
        x = torch.randn(b, {n}, {n}, device=dev, dtype=dt); w = torch.randn({n}, {n}, device=dev, dtype=dt)
        stmt, env = 'torch.matmul(x, w); sync()', dict(x=x, w=w)
    else:
        x = torch.randn(b, {n}, device=dev, dtype=dt); y = torch.empty_like(x)
        stmt, env = 'y.copy_(x); sync()', dict(x=x, y=y)
    sync = (lambda: torch.cuda.synchronize()) if dev.type == 'cuda' else (lambda: None)
    env.update(torch=torch, sync=sync)
    for _ in range(3): exec(stmt, env)
    m = benchmark.Timer(stmt=stmt, globals=env, num_threads=torch.get_num_threads()).blocked_autorange(min_run_time=1.0)
    print(json.dumps(dict(batch=b, mean_s=m.mean, median_s=m.median)))
    del x
"""
    out = subprocess.run([args.python, "-c", code], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"pytorch failed: {out.stderr[-2000:]}")
    return {r["batch"]: r for r in map(json.loads, [l for l in out.stdout.splitlines() if l.startswith("{")])}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--headroom", default="target/release/headroom")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="f32")
    ap.add_argument("--matmul-n", type=int, default=1024)
    ap.add_argument("--matmul-batches", default="1,4")
    ap.add_argument("--copy-len", type=int, default=1 << 24)
    ap.add_argument("--copy-batches", default="1,4")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    n, length, e = args.matmul_n, args.copy_len, ELEM[args.dtype]
    best = {}

    def keep(key, v):
        best[key] = max(best.get(key, 0.0), v)

    with tempfile.TemporaryDirectory() as home:
        for _ in range(args.rounds):
            h = headroom(args, home, "matmul", n, args.matmul_batches, "infer", args.dtype)
            for b, p in h.items():
                keep(("matmul", "headroom", b), p["samples_per_s"] * 2 * n**3 / 1e12)
            t = headroom(args, home, "matmul", n, args.matmul_batches, "train", args.dtype)
            for b, p in t.items():
                keep(("matmul-train", "headroom", b), p["samples_per_s"] * p["flops_per_sample"] / 1e12)
            for b, r in pytorch(args, "matmul", n, args.matmul_batches, args.dtype).items():
                keep(("matmul", "pytorch", b), b * 2 * n**3 / r["mean_s"] / 1e12)
            h = headroom(args, home, "copy", length, args.copy_batches, "infer", args.dtype)
            for b, p in h.items():
                keep(("copy", "headroom", b), p["samples_per_s"] * 2 * length * e / 1e9)
            for b, r in pytorch(args, "copy", length, args.copy_batches, args.dtype).items():
                keep(("copy", "pytorch", b), b * 2 * length * e / r["mean_s"] / 1e9)
    rows = []
    print(f"close to the limit on {args.device}, {args.dtype}, best of {args.rounds} rounds")
    print("| what | size | batch | Headroom | PyTorch | ratio | Headroom training step |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for b in [int(v) for v in args.matmul_batches.split(",")]:
        hv, pv, tv = best.get(("matmul", "headroom", b)), best.get(("matmul", "pytorch", b)), best.get(("matmul-train", "headroom", b))
        rows.append({"what": "matmul TFLOP/s", "n": n, "batch": b, "headroom": hv, "pytorch": pv, "train": tv})
        print(f"| matmul TFLOP/s | {n}×{n} | {b} | {hv:.4g} | {pv:.4g} | {hv / pv:.3f} | {tv:.4g} |")
    for b in [int(v) for v in args.copy_batches.split(",")]:
        hv, pv = best.get(("copy", "headroom", b)), best.get(("copy", "pytorch", b))
        rows.append({"what": "copy GB/s", "n": length, "batch": b, "headroom": hv, "pytorch": pv})
        print(f"| copy GB/s | {length * e / 2**20:.0f} MiB/sample | {b} | {hv:.4g} | {pv:.4g} | {hv / pv:.3f} | |")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"args": vars(args), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
