# A deep model trained with activation checkpointing, as fine-tuning scripts turn it on
# (HF's gradient_checkpointing_enable): each block's forward is run again during backward.
# --reentrant picks the older reentrant implementation (it calls backward once per block from
# inside the loss's backward); --manual updates the weights by hand, with no optimizer.
import argparse
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint
from own_timer import OwnTimer

p = argparse.ArgumentParser()
p.add_argument("--batch_size", type=int, default=32)
p.add_argument("--steps", type=int, default=120)
p.add_argument("--reentrant", action="store_true")
p.add_argument("--manual", action="store_true")
a = p.parse_args()
torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, h):
        return h + self.ff(self.norm(h))


class Net(nn.Module):
    def __init__(self, d=128, depth=4):
        super().__init__()
        self.embed = nn.Embedding(500, d)
        self.blocks = nn.ModuleList(Block(d) for _ in range(depth))
        self.head = nn.Linear(d, 500)

    def forward(self, idx):
        h = self.embed(idx)
        for block in self.blocks:
            h = checkpoint(block, h, use_reentrant=a.reentrant)
        return self.head(h)


model = Net()
opt = None if a.manual else torch.optim.AdamW(model.parameters(), lr=1e-3)
data = torch.randint(0, 500, (a.batch_size * a.steps, 33))
timer = OwnTimer()
for step in range(a.steps):
    chunk = data[step * a.batch_size:(step + 1) * a.batch_size]
    idx, target = chunk[:, :-1], chunk[:, 1:]
    logits = model(idx)
    loss = nn.functional.cross_entropy(logits.reshape(-1, 500), target.reshape(-1))
    if a.manual:
        model.zero_grad(set_to_none=True)
        loss.backward()
        with torch.no_grad():
            for q in model.parameters():
                q.add_(q.grad, alpha=-0.05)
    else:
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    timer.iteration(idx.size(0))
    if step % 40 == 0:
        print(f"step {step} loss {loss.item():.4f}", flush=True)
timer.report()
