# Inference only: a no_grad loop over a DataLoader, no backward anywhere.
import argparse
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from own_timer import OwnTimer

p = argparse.ArgumentParser()
p.add_argument("--batch-size", type=int, default=64)
p.add_argument("--passes", type=int, default=2)
a = p.parse_args()
torch.manual_seed(0)
loader = DataLoader(TensorDataset(torch.randn(24000, 128)), batch_size=a.batch_size)
model = nn.Sequential(nn.Linear(128, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)).eval()
timer = OwnTimer()
with torch.no_grad():
    for _ in range(a.passes):
        for (x,) in loader:
            model(x).argmax(1)
            timer.iteration(x.size(0))
timer.report()
