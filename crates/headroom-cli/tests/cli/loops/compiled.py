# A model wrapped by torch.compile (the `eager` backend by default here, which needs no C
# compiler: the wrapper and its calls are the same as inductor's), trained over a DataLoader.
import argparse
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from own_timer import OwnTimer

p = argparse.ArgumentParser()
p.add_argument("--backend", default="eager")
a = p.parse_args()
torch.manual_seed(0)
loader = DataLoader(TensorDataset(torch.randn(4096, 64), torch.randint(0, 4, (4096,))), batch_size=64, shuffle=True)
model = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 4))
compiled = torch.compile(model, backend=a.backend)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
timer = OwnTimer()
for epoch in range(3):
    for x, y in loader:
        loss = nn.functional.cross_entropy(compiled(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        timer.iteration(x.size(0))
timer.report()
