# Length-bucketed batches from a batch_sampler: every batch a different size, as translation
# and speech scripts make them (a token budget per batch).
import argparse
import random
import torch
from torch import nn
from torch.utils.data import DataLoader
from own_timer import OwnTimer

p = argparse.ArgumentParser()
p.add_argument("--max_tokens", type=int, default=2048)
p.add_argument("--epochs", type=int, default=2)
a = p.parse_args()
torch.manual_seed(0)
random.seed(0)
lengths = [random.randint(8, 64) for _ in range(3000)]
data = [torch.randint(0, 100, (n,)) for n in lengths]


def buckets():
    order = sorted(range(len(data)), key=lambda i: lengths[i])
    out, cur, longest = [], [], 0
    for i in order:
        longest = max(longest, lengths[i])
        if cur and longest * (len(cur) + 1) > a.max_tokens:
            out.append(cur)
            cur, longest = [], lengths[i]
        cur.append(i)
    out.append(cur)
    random.shuffle(out)
    return out


def collate(items):
    return nn.utils.rnn.pad_sequence(items, batch_first=True)


model = nn.Sequential(nn.Embedding(100, 64), nn.Linear(64, 100))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
timer = OwnTimer()
for epoch in range(a.epochs):
    loader = DataLoader(data, batch_sampler=buckets(), collate_fn=collate)
    for x in loader:
        logits = model(x)
        loss = nn.functional.cross_entropy(logits.reshape(-1, 100), x.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        timer.iteration(x.size(0))
    print(f"epoch {epoch} loss {loss.item():.3f}", flush=True)
timer.report()
