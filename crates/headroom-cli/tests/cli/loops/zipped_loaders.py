# Two DataLoaders zipped in one loop, as semi-supervised and domain-adaptation code does: a
# labelled batch of 32 beside an unlabelled one of 64 from a longer loader, one optimizer step
# per pair. zip stops with the shorter loader, leaving the longer one's pass before its end.
# Its own timer counts the labelled samples.
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from own_timer import OwnTimer

torch.manual_seed(0)
labelled = DataLoader(TensorDataset(torch.randn(3200, 64), torch.randint(0, 4, (3200,))), batch_size=32, shuffle=True)
unlabelled = DataLoader(TensorDataset(torch.randn(8000, 64)), batch_size=64, shuffle=True)
model = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 4))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
timer = OwnTimer()
for epoch in range(3):
    for (x, y), (u,) in zip(labelled, unlabelled):
        confident = model(u).softmax(1).max(1).values.mean()
        loss = nn.functional.cross_entropy(model(x), y) - 0.1 * confident
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        timer.iteration(x.size(0))
    print(f"epoch {epoch + 1} loss {loss.item():.4f}", flush=True)
timer.report()
