# A loop Headroom cannot time: batches from a DataLoader, a linear model fitted with gradients
# written out by hand (no module, no autograd, no optimizer), for a long time.
import argparse, time
import torch
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--batch-size", type=int, default=32)
a = p.parse_args()
x = torch.randn(4096, 16)
y = x @ torch.randn(16, 1)
w = torch.zeros(16, 1)
loader = DataLoader(TensorDataset(x, y), batch_size=a.batch_size)
until = time.time() + 120
while time.time() < until:
    for xb, yb in loader:
        w -= 0.01 * xb.T @ (xb @ w - yb) / xb.size(0)
print("fitted", flush=True)
