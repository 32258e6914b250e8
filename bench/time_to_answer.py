"""Time to answer: how long `headroom sweep` takes to find the largest batch that fits and the
best-throughput batch, against the batch-size finders researchers use today, on the same model and
device, one after the other in one run:

  * Headroom, default budget (90 % of free memory): its normal answer;
  * Headroom, `--budget 100%`: the same question the others answer (the device's own limit);
  * PyTorch Lightning `Tuner.scale_batch_size(mode="binsearch")` (largest batch only);
  * Hugging Face accelerate `find_executable_batch_size` (a batch that runs, halving from a start).

Each tool runs in a fresh process; the wall time includes starting it (Python imports, libtorch
and device initialisation) and is also given for the search alone where the tool can tell.
Headroom's sweep overhead is given two ways: its wall time over the sum of the timed steps its
figures come from ("over timed"), and over the seconds of every step it ran, warm-up and each
point's first step included ("over steps": what is left is the tool's own cost — starting,
planning, making inputs, freeing memory between points).

`--before PATH` runs a second `headroom` (an older build) right after each Headroom run, and
`--rounds N` repeats the Headroom runs N times, interleaved, so the two are compared side by side
on the same machine state.

    python bench/time_to_answer.py --headroom target/release/headroom --device cuda \
        --workload vit-tiny --out results/time_to_answer.json

The Lightning and accelerate runs use `torch_loop.py`'s model (layer for layer Headroom's), AdamW
lr 1e-4, inputs made on the device each step (no data loader cost, as Headroom's default).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def run_headroom(args, budget, home, binary=None, label="headroom"):
    cmd = [binary or args.headroom, "sweep", "--device", args.device, "--workload", args.workload, "--json"]
    if budget:
        cmd += ["--budget", budget]
    if args.max_batch:
        cmd += ["--max-batch", str(args.max_batch)]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=dict(os.environ, HEADROOM_HOME=home), capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        sys.exit(f"headroom failed ({out.returncode}): {out.stderr[-2000:]}")
    doc = json.loads(out.stdout)
    pts = doc["points"]
    ok = [p for p in pts if p["status"] == "ok"]
    # The timed steps' own seconds: timed steps x batch / samples per second.
    timed = sum(p["timed_steps"] * p["batch"] / p["samples_per_s"] for p in ok if p.get("samples_per_s"))
    # Every step the points ran (older builds do not report it).
    steps = sum(p["steps_s"] for p in ok) if all(p.get("steps_s") is not None for p in ok) else None
    s = doc["summary"]
    budget_bytes = doc["hello"]["budget_bytes"]
    fit = max((p["batch"] for p in ok), default=None)
    fit_pt = next((p for p in ok if p["batch"] == fit), None)
    return {
        "tool": f"{label} --budget {budget or 'default (90% of free)'}",
        "wall_s": wall,
        "search_s": None,
        "largest_fit": s.get("max_fit_batch"),
        "first_failing": s.get("first_failing_batch"),
        "best_batch": s.get("best_batch"),
        "knee_batch": s.get("knee_batch"),
        "recommended": s.get("recommended_batch"),
        "limit": s.get("limit"),
        "points_run": len([p for p in pts if p["timed_steps"] > 0 or p["status"] == "oom"]),
        "points_refused": len([p for p in pts if p["status"] == "over_budget" and p["timed_steps"] == 0]),
        "ooms": len([p for p in pts if p["status"] == "oom"]),
        "timed_s": timed,
        "overhead": wall / timed if timed else None,
        "steps_s": steps,
        "overhead_steps": wall / steps if steps else None,
        "points_batches": [p["batch"] for p in pts],
        "budget_bytes": budget_bytes,
        "peak_at_fit": fit_pt and fit_pt.get("peak_bytes"),
        "fits": bool(fit_pt and fit_pt.get("peak_bytes") is not None and fit_pt["peak_bytes"] <= budget_bytes),
        "points": [{k: p.get(k) for k in ("batch", "status", "samples_per_s", "peak_bytes", "predicted_peak_bytes",
                                          "warmup_steps", "timed_steps", "steps_s", "first_step_s")}
                   for p in pts],
    }


def run_python(args, tool):
    cmd = [args.python, os.path.abspath(__file__), "--inner", tool, "--device", args.device,
           "--workload", args.workload, "--max-batch", str(args.max_batch or 0), "--threads", str(args.threads)]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    lines = [l for l in out.stdout.splitlines() if l.startswith("{")]
    if out.returncode != 0 or not lines:
        return {"tool": tool, "wall_s": wall, "error": out.stderr[-1500:]}
    r = json.loads(lines[-1])
    r["wall_s"] = wall
    return r


# ---- inside the child process: one Python tool ----------------------------------------------------

def inner(args):
    import torch
    import torch.nn.functional as F
    sys.path.insert(0, HERE)
    import torch_loop

    if args.threads:
        torch.set_num_threads(args.threads)
    dev = torch.device(args.device.replace("cuda:0", "cuda"))
    torch.manual_seed(0)
    model, shape, (xkind, vocab), (ykind, classes) = torch_loop.build(args.workload, None)
    model = model.to(dev)

    def make(b):
        x = torch.randint(vocab, [b, *shape], device=dev) if xkind == "tokens" else torch.randn([b, *shape], device=dev)
        y = None
        if ykind == "class":
            y = torch.randint(classes, [b], device=dev)
        elif ykind == "token_class":
            y = torch.randint(classes, [b, *shape], device=dev)
        return x, y

    def loss_of(out, y):
        out = out.float()
        if ykind == "class":
            return F.nll_loss(F.log_softmax(out, -1), y)
        if ykind == "token_class":
            return F.nll_loss(F.log_softmax(out.reshape(-1, classes), -1), y.reshape(-1))
        return out.square().mean()

    trials = []
    if args.inner == "lightning":
        import lightning.pytorch as pl
        from lightning.pytorch.tuner import Tuner

        class Indices(torch.utils.data.Dataset):
            # Sample ids only; the step makes its inputs on the device, so the loader costs nothing.
            def __len__(self):
                return 1 << 30

            def __getitem__(self, i):
                return i

        class Module(pl.LightningModule):
            def __init__(self):
                super().__init__()
                self.net = model
                self.batch_size = 2

            def train_dataloader(self):
                return torch.utils.data.DataLoader(Indices(), batch_size=self.batch_size)

            def training_step(self, batch, _):
                x, y = make(batch.shape[0])
                trials.append(batch.shape[0]) if not trials or trials[-1] != batch.shape[0] else None
                return loss_of(self.net(x), y)

            def configure_optimizers(self):
                return torch.optim.AdamW(self.parameters(), lr=1e-4)

        trainer = pl.Trainer(accelerator="gpu" if dev.type == "cuda" else "cpu", devices=1, max_epochs=1,
                             logger=False, enable_checkpointing=False, enable_progress_bar=False,
                             enable_model_summary=False)
        module = Module()
        t0 = time.perf_counter()
        # Lightning stops at max_val (8192 by default) without trying it and answers 95 % of it
        # (margin): give it Headroom's ceiling, 16384 on a GPU, so it has to find the OOM.
        kw = {"mode": "binsearch", "init_val": 2, "steps_per_trial": 3, "max_val": args.max_batch or 16384}
        found = Tuner(trainer).scale_batch_size(module, **kw)
        search = time.perf_counter() - t0
        print(json.dumps({"tool": "lightning binsearch", "search_s": search, "largest_fit": found,
                          "trials": trials, "points_run": len(trials)}))
    elif args.inner == "accelerate":
        from accelerate.utils import find_executable_batch_size

        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        start = args.max_batch or 16384

        @find_executable_batch_size(starting_batch_size=start)
        def train(batch_size):
            trials.append(batch_size)
            x, y = make(batch_size)
            for _ in range(3):
                opt.zero_grad()
                loss_of(model(x), y).backward()
                opt.step()
            if dev.type == "cuda":
                torch.cuda.synchronize()
            return batch_size

        t0 = time.perf_counter()
        found = train()
        search = time.perf_counter() - t0
        print(json.dumps({"tool": f"accelerate find_executable_batch_size (from {start})", "search_s": search,
                          "largest_fit": found, "trials": trials, "points_run": len(trials)}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--headroom", default="target/release/headroom")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--workload", default="vit-tiny")
    ap.add_argument("--max-batch", type=int, default=0, help="ceiling for every tool (0: each tool's own)")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--tools", default="headroom,headroom-100,lightning,accelerate")
    ap.add_argument("--before", default="", help="an older headroom binary, run after each Headroom run")
    ap.add_argument("--rounds", type=int, default=1, help="Headroom runs repeated this many times, interleaved")
    ap.add_argument("--out", default="")
    ap.add_argument("--inner", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.inner:
        return inner(args)
    rows = []
    tools = args.tools.split(",")
    hr_tools = [t for t in tools if t.startswith("headroom")]
    with tempfile.TemporaryDirectory() as home:
        for r in range(args.rounds):
            for tool in hr_tools:
                budget = "100%" if tool == "headroom-100" else ""
                runs = [(args.headroom, "headroom")] + ([(args.before, "before")] if args.before else [])
                for binary, label in runs:
                    with tempfile.TemporaryDirectory(dir=home) as h:
                        rows.append(run_headroom(args, budget, h, binary, label))
                    rows[-1]["round"] = r
                    print(json.dumps({k: v for k, v in rows[-1].items() if k != "points"}), file=sys.stderr, flush=True)
        for tool in tools:
            if not tool.startswith("headroom"):
                rows.append(run_python(args, tool))
                print(json.dumps({k: v for k, v in rows[-1].items() if k != "points"}), file=sys.stderr, flush=True)
    print(f"time to answer: {args.workload} on {args.device} (fp32, training step)")
    print("| tool | wall s | search s | largest batch that fits | best / knee | points run | over timed | over steps |")
    print("|---|---:|---:|---:|---|---:|---:|---:|")
    for r in rows:
        if "error" in r:
            print(f"| {r['tool']} | {r['wall_s']:.1f} | - | failed: {r['error'].strip().splitlines()[-1][:80]} | | | | |")
            continue
        best = f"{r.get('best_batch')} / {r.get('knee_batch')}" if "best_batch" in r else "not answered"
        search = f"{r['search_s']:.1f}" if r.get("search_s") is not None else "-"
        over = f"{r['overhead']:.2f}" if r.get("overhead") else "-"
        over_steps = f"{r['overhead_steps']:.2f}" if r.get("overhead_steps") else "-"
        print(f"| {r['tool']} | {r['wall_s']:.2f} | {search} | {r.get('largest_fit')} | {best} | "
              f"{r.get('points_run')} | {over} | {over_steps} |")
    by_tool = {}
    for r in rows:
        if "error" not in r:
            by_tool.setdefault(r["tool"], []).append(r["wall_s"])
    for tool, walls in by_tool.items():
        if len(walls) > 1:
            w = sorted(walls)
            print(f"{tool}: median {w[len(w) // 2]:.2f} s of {len(w)} ({', '.join(f'{x:.2f}' for x in walls)})")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"args": vars(args), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
