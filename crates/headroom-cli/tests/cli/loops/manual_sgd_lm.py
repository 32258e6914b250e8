# A word-level language model trained as the classic example does: batches sliced by hand
# from one long tensor (no DataLoader), weights updated by hand on .grad (no torch.optim),
# progress lines that name the epoch while it runs, an "end of epoch" line with its time. With
# --validate, each epoch ends as the classic's does: evaluate() over a held-out tensor, the model
# in eval mode under no_grad, which its timer (its ms/batch) leaves out and its epoch time keeps.
import argparse, time
import torch
from torch import nn
from own_timer import OwnTimer

p = argparse.ArgumentParser()
# --sequences: a name Headroom does not read, so the batch must come from the loop itself.
p.add_argument("--batch-size", "--sequences", dest="batch_size", type=int, default=20)
p.add_argument("--arch", choices=["lstm", "transformer"], default="lstm")
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--tokens", type=int, default=200000)
p.add_argument("--bptt", type=int, default=35)
p.add_argument("--validate", action="store_true")
a = p.parse_args()
torch.manual_seed(0)
ntok = 800
data = torch.randint(0, ntok, (a.tokens,))
nbatch = data.size(0) // a.batch_size
data = data[: nbatch * a.batch_size].view(a.batch_size, -1).t().contiguous()
# Held out, batched by 10 as the classic's evaluation is.
val = torch.randint(0, ntok, (a.tokens,))
val = val[: (val.size(0) // 10) * 10].view(10, -1).t().contiguous()


class LM(nn.Module):
    """Sequence first, as the classic example: (sequence, batch) in, (sequence, batch, ntok) out."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(ntok, 96)
        if a.arch == "lstm":
            self.rnn = nn.LSTM(96, 96)
        else:
            self.layer = nn.TransformerEncoderLayer(96, 4, 192, dropout=0.0)
        self.out = nn.Linear(96, ntok)

    def forward(self, x, hidden):
        if a.arch == "lstm":
            o, hidden = self.rnn(self.emb(x), hidden)
        else:
            o = self.layer(self.emb(x))
        return self.out(o), hidden


model = LM()
criterion = nn.CrossEntropyLoss()
timer = OwnTimer()
lr = 5.0
batches = (data.size(0) - 1 + a.bptt - 1) // a.bptt


def evaluate():
    model.eval()
    total, hidden = 0.0, None
    with torch.no_grad():
        for i in range(0, val.size(0) - 1, a.bptt):
            seq = min(a.bptt, val.size(0) - 1 - i)
            out, hidden = model(val[i : i + seq], hidden)
            total += seq * criterion(out.view(-1, ntok), val[i + 1 : i + 1 + seq].reshape(-1)).item()
    model.train()
    return total / (val.size(0) - 1)


for epoch in range(1, a.epochs + 1):
    epoch_start = time.time()
    hidden = None
    for batch, i in enumerate(range(0, data.size(0) - 1, a.bptt)):
        seq = min(a.bptt, data.size(0) - 1 - i)
        x, y = data[i : i + seq], data[i + 1 : i + 1 + seq].reshape(-1)
        if hidden is not None:
            hidden = tuple(h.detach() for h in hidden)
        model.zero_grad()
        out, hidden = model(x, hidden)
        loss = criterion(out.view(-1, ntok), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        for w in model.parameters():
            w.data.add_(w.grad, alpha=-lr)
        timer.iteration(a.batch_size)
        if batch % 10 == 0 and batch > 0:
            print(f"| epoch {epoch:3d} | {batch:5d}/{batches:5d} batches | loss {loss.item():5.2f}", flush=True)
    valid = ""
    if a.validate:
        timer.pause()
        valid = f" valid loss {evaluate():5.2f} |"
        timer.resume()
    print(f"| end of epoch {epoch:3d} | time: {time.time() - epoch_start:5.3f}s |{valid}", flush=True)
timer.report()
