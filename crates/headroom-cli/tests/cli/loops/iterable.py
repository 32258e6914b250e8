# Batches from an IterableDataset (a stream with no length) through a DataLoader.
import argparse
import torch
from torch import nn
from torch.utils.data import DataLoader, IterableDataset
from own_timer import OwnTimer

p = argparse.ArgumentParser()
p.add_argument("--batch-size", type=int, default=24)
p.add_argument("--epochs", type=int, default=3)
a = p.parse_args()


class Stream(IterableDataset):
    def __iter__(self):
        g = torch.Generator().manual_seed(0)
        for _ in range(10000):
            yield torch.randn(64, generator=g), int(torch.randint(0, 4, (1,), generator=g))


loader = DataLoader(Stream(), batch_size=a.batch_size)
model = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 4))
opt = torch.optim.Adam(model.parameters())
timer = OwnTimer()
for epoch in range(a.epochs):
    for x, y in loader:
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        timer.iteration(x.size(0))
    print(f"epoch {epoch + 1} done", flush=True)
timer.report()
