# A functional loop: gradients taken with torch.autograd.grad and applied by hand, batches from a
# DataLoader, no optimizer and no backward call.
import argparse
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from own_timer import OwnTimer

p = argparse.ArgumentParser()
p.add_argument("--batch-size", type=int, default=32)
p.add_argument("--epochs", type=int, default=2)
a = p.parse_args()
torch.manual_seed(0)
loader = DataLoader(TensorDataset(torch.randn(16384, 64), torch.randint(0, 8, (16384,))), batch_size=a.batch_size)
model = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 8))
params = list(model.parameters())
timer = OwnTimer()
for epoch in range(a.epochs):
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for w, g in zip(params, grads):
                w -= 0.05 * g
        timer.iteration(x.size(0))
    print(f"epoch {epoch + 1} loss {loss.item():.4f}", flush=True)
timer.report()
