# An accelerate loop: Accelerator.prepare, accelerator.backward, gradient accumulation 2 with
# accelerator.accumulate (the optimizer steps only when gradients sync).
import argparse
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from accelerate import Accelerator
from own_timer import OwnTimer

p = argparse.ArgumentParser()
p.add_argument("--batch-size", type=int, default=32)
p.add_argument("--epochs", type=int, default=2)
a = p.parse_args()
torch.manual_seed(0)
accelerator = Accelerator(cpu=True, gradient_accumulation_steps=2)
model = nn.Sequential(nn.Linear(64, 1024), nn.ReLU(), nn.Linear(1024, 8))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
loader = DataLoader(TensorDataset(torch.randn(8192, 64), torch.randint(0, 8, (8192,))), batch_size=a.batch_size, shuffle=True)
model, opt, loader = accelerator.prepare(model, opt, loader)
timer = OwnTimer()
seen = 0
for epoch in range(a.epochs):
    for x, y in loader:
        with accelerator.accumulate(model):
            loss = nn.functional.cross_entropy(model(x), y)
            accelerator.backward(loss)
            opt.step()
            opt.zero_grad()
        seen += x.size(0)
        if accelerator.sync_gradients:
            timer.iteration(seen)
            seen = 0
    print(f"epoch {epoch + 1} loss {loss.item():.4f}", flush=True)
timer.report()
