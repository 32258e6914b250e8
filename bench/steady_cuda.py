#!/usr/bin/env python3
"""A steady CUDA training loop for the energy and profiler benchmarks: torchvision resnet50 on
images made once on the device (no DataLoader, so the GPU's power is steady), SGD, `-b BATCH`.
It trains for --seconds (or --steps) and appends "time batch samples" after every step to
--stamps, so a benchmark can integrate `nvidia-smi`'s power over exactly the steps it trained.
"""
import argparse, time, torch, torchvision

p = argparse.ArgumentParser()
p.add_argument("-b", "--batch-size", type=int, default=128)
p.add_argument("--seconds", type=float, default=0.0)
p.add_argument("--steps", type=int, default=0)
p.add_argument("--stamps", default="")
p.add_argument("--image", type=int, default=160)
p.add_argument("--model", default="resnet50", choices=["resnet50", "transformer"])
a = p.parse_args()


class Tiny(torch.nn.Module):
    """A small transformer classifier: 4 encoder layers, width 256, 8 heads, sequences of 64."""

    def __init__(s):
        super().__init__()
        s.embed = torch.nn.Embedding(1000, 256)
        layer = torch.nn.TransformerEncoderLayer(256, 8, 1024, dropout=0.1, batch_first=True)
        s.encoder = torch.nn.TransformerEncoder(layer, 4, enable_nested_tensor=False)
        s.head = torch.nn.Linear(256, 1000)

    def forward(s, tokens):
        return s.head(s.encoder(s.embed(tokens)).mean(dim=1))


if a.model == "resnet50":
    model = torchvision.models.resnet50().cuda()
    x = torch.randn(a.batch_size, 3, a.image, a.image, device="cuda")
else:
    model = Tiny().cuda()
    x = torch.randint(0, 1000, (a.batch_size, 64), device="cuda")
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
y = torch.randint(0, 1000, (a.batch_size,), device="cuda")
stamps = open(a.stamps, "a", buffering=1) if a.stamps else None
began = time.time()
step = 0
while True:
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch.cuda.synchronize()
    step += 1
    now = time.time()
    if stamps:
        stamps.write(f"{now:.6f} {a.batch_size} {a.batch_size}\n")
    if (a.steps and step >= a.steps) or (a.seconds and now - began >= a.seconds):
        break
    if not a.steps and not a.seconds and step >= 100:
        break
print(f"trained {step} steps of {a.batch_size} in {time.time() - began:.2f} s", flush=True)
