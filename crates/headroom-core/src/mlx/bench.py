# Headroom's MLX side of `sweep --compare mlx`: the same workload as Headroom's built-in one, at
# the same batch and dtype (float32), timed the same way (warm-up steps, then the median of timed
# steps, each ending when MLX has evaluated everything). Prints one JSON line on stdout, with the
# contract it ran (input shape, batch, dtype).
#   argv: workload (mlp | matmul | cnn | vit-tiny | gpt-tiny), batch, warm-up steps, timed steps
# The models are Headroom's (crates/headroom-torch/src/workloads) written with mlx.nn: the same
# layers, widths and shapes; MLX's convolutions take channels last, so images are N×H×W×C here
# where torch has N×C×H×W.
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

    elif workload in ("cnn", "vit-tiny", "gpt-tiny"):
        model, make, shape = build(workload, batch, mx, nn)
        opt = optim.AdamW(learning_rate=1e-4)

        def loss_fn(m, x, y):
            return nn.losses.cross_entropy(m(x), y, reduction="mean")

        grad = nn.value_and_grad(model, loss_fn)
        mx.eval(model.parameters())

        def step():
            x, y = make()
            loss, g = grad(model, x, y)
            opt.update(model, g)
            mx.eval(loss, model.parameters(), opt.state)

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
        "input_shape": {"mlp": [784], "matmul": [1024, 1024], "cnn": [3, 32, 32], "vit-tiny": [3, 224, 224], "gpt-tiny": [256]}[workload],
        "dtype": "f32",
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



def build(workload, batch, mx, nn):
    """The model, a maker of one batch (inputs, targets) and Headroom's input shape."""
    if workload == "cnn":
        # Three stages of two basic blocks, 32/64/128 channels, for 3x32x32 images, 10 classes.
        class ConvBn(nn.Module):
            def __init__(self, c_in, c_out, k, stride):
                super().__init__()
                self.conv = nn.Conv2d(c_in, c_out, k, stride=stride, padding=k // 2, bias=False)
                self.bn = nn.BatchNorm(c_out)

            def __call__(self, x):
                return self.bn(self.conv(x))

        class Block(nn.Module):
            def __init__(self, c_in, c_out, stride):
                super().__init__()
                self.a = ConvBn(c_in, c_out, 3, stride)
                self.b = ConvBn(c_out, c_out, 3, 1)
                self.short = ConvBn(c_in, c_out, 1, stride) if stride != 1 or c_in != c_out else None

            def __call__(self, x):
                skip = self.short(x) if self.short is not None else x
                return nn.relu(self.b(nn.relu(self.a(x))) + skip)

        class ResNet(nn.Module):
            def __init__(self):
                super().__init__()
                self.stem = ConvBn(3, 32, 3, 1)
                blocks, c_in = [], 32
                for s, w in enumerate((32, 64, 128)):
                    for b in range(2):
                        blocks.append(Block(c_in, w, 2 if s > 0 and b == 0 else 1))
                        c_in = w
                self.blocks = blocks
                self.fc = nn.Linear(c_in, 10)

            def __call__(self, x):
                h = nn.relu(self.stem(x))
                for b in self.blocks:
                    h = b(h)
                return self.fc(mx.mean(h, axis=(1, 2)))

        return ResNet(), lambda: (mx.random.normal((batch, 32, 32, 3)), mx.random.randint(0, 10, (batch,))), [3, 32, 32]

    class Block(nn.Module):
        # Pre-norm: attention (one qkv projection, scaled dot-product) then a 4x GELU MLP.
        def __init__(self, width, heads, causal):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
            self.fc1, self.fc2 = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)
            self.heads, self.causal = heads, causal

        def __call__(self, x):
            b, t, c = x.shape
            qkv = self.qkv(self.ln1(x)).reshape(b, t, 3, self.heads, c // self.heads).transpose(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]
            mask = nn.MultiHeadAttention.create_additive_causal_mask(t) if self.causal else None
            att = mx.fast.scaled_dot_product_attention(q, k, v, scale=(c // self.heads) ** -0.5, mask=mask)
            x = x + self.proj(att.transpose(0, 2, 1, 3).reshape(b, t, c))
            return x + self.fc2(nn.gelu(self.fc1(self.ln2(x))))

    if workload == "vit-tiny":
        # Patch 16, width 192, depth 12, 3 heads, 224x224 images, 1000 classes.
        class Vit(nn.Module):
            def __init__(self):
                super().__init__()
                self.patch = nn.Conv2d(3, 192, 16, stride=16)
                self.cls = mx.random.normal((1, 1, 192)) * 0.02
                self.pos = mx.random.normal((1, 197, 192)) * 0.02
                self.blocks = [Block(192, 3, False) for _ in range(12)]
                self.ln, self.head = nn.LayerNorm(192), nn.Linear(192, 1000)

            def __call__(self, x):
                p = self.patch(x).reshape(x.shape[0], -1, 192)
                h = mx.concatenate([mx.broadcast_to(self.cls, (x.shape[0], 1, 192)), p], axis=1) + self.pos
                for blk in self.blocks:
                    h = blk(h)
                return self.head(self.ln(h)[:, 0])

        return Vit(), lambda: (mx.random.normal((batch, 224, 224, 3)), mx.random.randint(0, 1000, (batch,))), [3, 224, 224]

    # gpt-tiny: vocabulary 8192, width 256, depth 4, 4 heads, causal, 256 tokens.
    class Gpt(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(8192, 256)
            self.pos = mx.random.normal((1, 2048, 256)) * 0.02
            self.blocks = [Block(256, 4, True) for _ in range(4)]
            self.ln, self.head = nn.LayerNorm(256), nn.Linear(256, 8192)

        def __call__(self, x):
            h = self.tok(x) + self.pos[:, : x.shape[1]]
            for blk in self.blocks:
                h = blk(h)
            return self.head(self.ln(h))

    return Gpt(), lambda: (mx.random.randint(0, 8192, (batch, 256)), mx.random.randint(0, 8192, (batch, 256))), [256]


main()
