# Gradient accumulation over 4 batches with a GradScaler, whose first steps find inf
# gradients (the loss is blown up on purpose) and are skipped; the last batch is partial.
import argparse
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from own_timer import OwnTimer

p = argparse.ArgumentParser()
p.add_argument("--batch-size", type=int, default=16)
p.add_argument("--epochs", type=int, default=2)
a = p.parse_args()
torch.manual_seed(0)
loader = DataLoader(TensorDataset(torch.randn(16384, 64), torch.randint(0, 8, (16384,))), batch_size=a.batch_size)
model = nn.Sequential(nn.Linear(64, 1024), nn.ReLU(), nn.Linear(1024, 8))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16)
accum, seen = 4, 0
timer = OwnTimer()
for epoch in range(a.epochs):
    for i, (x, y) in enumerate(loader):
        blow_up = 1e38 if epoch == 0 and i < 8 else 1.0
        loss = nn.functional.cross_entropy(model(x), y) * blow_up / accum
        scaler.scale(loss).backward()
        seen += x.size(0)
        if (i + 1) % accum == 0:
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()
            timer.iteration(seen)
            seen = 0
    print(f"epoch {epoch + 1} loss {loss.item():.4f} scale {scaler.get_scale():.0f}", flush=True)
timer.report()
