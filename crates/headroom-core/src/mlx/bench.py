# Headroom's MLX side of `sweep --compare mlx`: the same workload as Headroom's built-in one, at
# the same batch and dtype (float32), timed the same way (warm-up steps, then the median of timed
# steps, each ending when MLX has evaluated everything). Prints one JSON line on stdout.
#   argv: workload (mlp | matmul), batch, warm-up steps, timed steps
import json
import sys
import time


def main():
    workload, batch, warmup, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    import mlx.core as mx
    import mlx.nn as nn
    import mlx.optimizers as optim

    mx.random.seed(0)
    if workload == "mlp":
        # 784 -> 1024 -> 1024 -> 10 with ReLU, AdamW at 1e-4, cross-entropy: Headroom's `mlp`.
        model = nn.Sequential(
            nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)
        )
        opt = optim.AdamW(learning_rate=1e-4)

        def loss_fn(m, x, y):
            return nn.losses.cross_entropy(m(x), y, reduction="mean")

        grad = nn.value_and_grad(model, loss_fn)

        def step():
            x = mx.random.normal((batch, 784))
            y = mx.random.randint(0, 10, (batch,))
            loss, g = grad(model, x, y)
            opt.update(model, g)
            mx.eval(loss, model.parameters(), opt.state)

    elif workload == "matmul":
        # Each sample an N x N matrix times a learned N x N weight, inference: Headroom's `matmul`.
        n = 1024
        w = mx.random.normal((n, n)) * (1.0 / n ** 0.5)
        mx.eval(w)

        def step():
            x = mx.random.normal((batch, n, n))
            mx.eval(x @ w)

    else:
        raise SystemExit(f"headroom-mlx: no MLX equivalent of the workload {workload!r}")

    reset = getattr(mx, "reset_peak_memory", None) or getattr(getattr(mx, "metal", None), "reset_peak_memory", None)
    for _ in range(warmup):
        step()
    if reset:
        reset()
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        step()
        times.append((time.perf_counter() - t) * 1e3)
    times.sort()
    p50 = times[len(times) // 2]
    peak = getattr(mx, "get_peak_memory", None) or getattr(getattr(mx, "metal", None), "get_peak_memory", None)
    print(json.dumps({
        "mlx_version": getattr(mx, "__version__", None),
        "device": str(mx.default_device()),
        "workload": workload,
        "batch": batch,
        "steps": steps,
        "step_ms_p50": p50,
        "step_ms_p95": times[min(len(times) - 1, int(len(times) * 0.95))],
        "samples_per_s": batch * 1e3 / p50 if p50 > 0 else None,
        "peak_bytes": int(peak()) if peak else None,
    }))


main()
