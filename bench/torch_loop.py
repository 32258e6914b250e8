"""A careful hand-written PyTorch training loop that mirrors Headroom's built-in workloads
layer for layer, timed with torch.utils.benchmark. Prints one JSON line per batch:
{"workload", "batch", "samples_per_s", "median_ms"}.

Inputs are made once per batch size on the device (or, with --host-inputs, on the host and
copied every step), as Headroom's sweep does. Used by bench/fidelity.py to compare Headroom's samples/s with PyTorch's own, side by side.
"""
import argparse
import json
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.benchmark as benchmark


class Mlp(nn.Module):
    def __init__(self, features=784, hidden=1024, classes=10):
        super().__init__()
        self.fc1 = nn.Linear(features, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, classes)

    def forward(self, x):
        x = x.flatten(1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def conv_bn(c_in, c_out, k, stride):
    return nn.Sequential(nn.Conv2d(c_in, c_out, k, stride, k // 2, bias=False), nn.BatchNorm2d(c_out))


class Block(nn.Module):
    def __init__(self, c_in, c_out, stride):
        super().__init__()
        self.a = conv_bn(c_in, c_out, 3, stride)
        self.b = conv_bn(c_out, c_out, 3, 1)
        self.short = conv_bn(c_in, c_out, 1, stride) if stride != 1 or c_in != c_out else None

    def forward(self, x):
        skip = x if self.short is None else self.short(x)
        return F.relu(self.b(F.relu(self.a(x))) + skip)


class ResNet(nn.Module):
    def __init__(self, c_in=3, widths=(32, 64, 128), classes=10):
        super().__init__()
        self.stem = conv_bn(c_in, widths[0], 3, 1)
        blocks, c = [], widths[0]
        for s, w in enumerate(widths):
            for b in range(2):
                blocks.append(Block(c, w, 2 if s > 0 and b == 0 else 1))
                c = w
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(c, classes)

    def forward(self, x):
        h = self.blocks(F.relu(self.stem(x)))
        return self.fc(F.adaptive_avg_pool2d(h, 1).flatten(1))


class TBlock(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.fc1, self.fc2 = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)
        self.heads = heads

    def forward(self, x, causal):
        b, t, c = x.shape
        qkv = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        att = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], is_causal=causal)
        x = x + self.proj(att.transpose(1, 2).reshape(b, t, c))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class Vit(nn.Module):
    def __init__(self, shape=(3, 224, 224), patch=16, width=192, depth=12, heads=3, classes=1000):
        super().__init__()
        tokens = (shape[1] // patch) * (shape[2] // patch) + 1
        self.patch = nn.Conv2d(shape[0], width, patch, patch)
        self.cls = nn.Parameter(torch.randn(1, 1, width) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, tokens, width) * 0.02)
        self.blocks = nn.ModuleList(TBlock(width, heads) for _ in range(depth))
        self.ln, self.head = nn.LayerNorm(width), nn.Linear(width, classes)

    def forward(self, x):
        p = self.patch(x).flatten(2).transpose(1, 2)
        h = torch.cat([self.cls.expand(p.shape[0], -1, -1), p], 1) + self.pos
        for blk in self.blocks:
            h = blk(h, False)
        return self.head(self.ln(h)[:, 0])


class Gpt(nn.Module):
    def __init__(self, vocab=8192, width=256, depth=4, heads=4, max_context=2048):
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Parameter(torch.randn(1, max_context, width) * 0.02)
        self.blocks = nn.ModuleList(TBlock(width, heads) for _ in range(depth))
        self.ln, self.head = nn.LayerNorm(width), nn.Linear(width, vocab)

    def forward(self, x):
        h = self.tok(x) + self.pos[:, : x.shape[1]]
        for blk in self.blocks:
            h = blk(h, True)
        return self.head(self.ln(h))


class MatMul(nn.Module):
    def __init__(self, n=1024):
        super().__init__()
        self.w = nn.Parameter(torch.randn(n, n) / math.sqrt(n))

    def forward(self, x):
        return x @ self.w


def build(name, shape):
    """Model, one sample's input shape, and how to make inputs and targets."""
    if name == "mlp":
        shape = shape or [784]
        return Mlp(math.prod(shape)), shape, ("float", None), ("class", 10)
    if name == "cnn":
        shape = shape or [3, 32, 32]
        return ResNet(shape[0]), shape, ("float", None), ("class", 10)
    if name == "vit-tiny":
        shape = shape or [3, 224, 224]
        return Vit(tuple(shape)), shape, ("float", None), ("class", 1000)
    if name == "gpt-tiny":
        shape = shape or [256]
        return Gpt(), shape, ("tokens", 8192), ("token_class", 8192)
    if name == "matmul":
        n = (shape or [1024])[0]
        return MatMul(n), [n, n], ("float", None), ("none", None)
    raise SystemExit(f"unknown workload {name}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workload", default="mlp")
    ap.add_argument("--batches", default="1,8,64")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="f32", choices=["f32", "f16", "bf16"])
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--input-shape", default="")
    ap.add_argument("--min-run-time", type=float, default=1.5)
    ap.add_argument("--foreach", action="store_true", help="AdamW(foreach=True), PyTorch's GPU default")
    ap.add_argument("--host-inputs", action="store_true",
                    help="make inputs on the host and copy them every step (Headroom's --host-inputs); "
                         "default: made once on the device, as Headroom does")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    dtype = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[args.dtype]
    dev = torch.device(args.device)
    shape = [int(d) for d in args.input_shape.split("x")] if args.input_shape else None
    torch.manual_seed(0)
    model, shape, (xkind, vocab), (ykind, classes) = build(args.workload, shape)
    model = model.to(dev, dtype)
    # C++ torch::optim::AdamW (what tch uses) steps parameter by parameter, as foreach=False does.
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=args.foreach)

    where = torch.device("cpu") if args.host_inputs else dev

    def make_batch(b):
        if xkind == "tokens":
            x = torch.randint(vocab, [b, *shape], device=where)
        else:
            x = torch.randn([b, *shape], dtype=dtype, device=where)
        y = None
        if ykind == "class":
            y = torch.randint(classes, [b], device=where)
        elif ykind == "token_class":
            y = torch.randint(classes, [b, *shape], device=where)
        return x, y

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        elif dev.type == "mps":
            torch.mps.synchronize()

    for b in [int(v) for v in args.batches.split(",")]:
        batch = make_batch(b)

        def step():
            x, y = batch
            x = x.to(dev)
            y = y.to(dev) if y is not None else None
            opt.zero_grad()
            out = model(x).float()
            if ykind == "class":
                loss = F.nll_loss(F.log_softmax(out, -1), y)
            elif ykind == "token_class":
                loss = F.nll_loss(F.log_softmax(out.reshape(-1, classes), -1), y.reshape(-1))
            else:
                loss = out.square().mean()
            loss.backward()
            opt.step()
            sync()

        for _ in range(3):
            step()
        m = benchmark.Timer(stmt="step()", globals={"step": step}, num_threads=torch.get_num_threads()).blocked_autorange(
            min_run_time=args.min_run_time
        )
        print(json.dumps({"workload": args.workload, "batch": b, "samples_per_s": b / m.mean, "median_ms": m.median * 1e3}), flush=True)


if __name__ == "__main__":
    main()
