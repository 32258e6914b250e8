# A nanoGPT-shaped loop: batches drawn at random offsets of a memory-mapped token file
# (get_batch, no DataLoader), 3 micro-batches accumulated per optimizer step, the next batch
# fetched while the model runs. With --eval_interval N, estimate_loss() as nanoGPT's: every N
# iterations (the first before any training), the model in eval mode under no_grad over fresh
# batches, which the timer leaves out.
import argparse, array, mmap, os, tempfile
import torch
from torch import nn
from own_timer import OwnTimer

p = argparse.ArgumentParser()
p.add_argument("--batch_size", type=int, default=8)
p.add_argument("--max_iters", type=int, default=240)
p.add_argument("--eval_interval", type=int, default=0)
p.add_argument("--eval_iters", type=int, default=20)
a = p.parse_args()
torch.manual_seed(0)
block, vocab, accum = 32, 512, 3
path = os.path.join(tempfile.mkdtemp(), "train.bin")
with open(path, "wb") as f:
    array.array("h", torch.randint(0, vocab, (200_000,)).tolist()).tofile(f)
with open(path, "rb") as f:
    mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
tokens = torch.frombuffer(mm, dtype=torch.int16)


def get_batch():
    ix = torch.randint(len(tokens) - block - 1, (a.batch_size,))
    x = torch.stack([tokens[i : i + block].long() for i in ix])
    y = torch.stack([tokens[i + 1 : i + 1 + block].long() for i in ix])
    return x, y


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(vocab, 64)
        self.block = nn.TransformerEncoderLayer(64, 4, 128, batch_first=True)
        self.head = nn.Linear(64, vocab)

    def forward(self, idx, targets):
        logits = self.head(self.block(self.emb(idx)))
        return logits, nn.functional.cross_entropy(logits.view(-1, vocab), targets.view(-1))


model = GPT()


@torch.no_grad()
def estimate_loss():
    model.eval()
    losses = torch.zeros(a.eval_iters)
    for k in range(a.eval_iters):
        _, loss = model(*get_batch())
        losses[k] = loss.item()
    model.train()
    return losses.mean()


opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
timer = OwnTimer()
X, Y = get_batch()
for it in range(a.max_iters):
    if a.eval_interval and it % a.eval_interval == 0:
        timer.pause()
        print(f"step {it}: val loss {estimate_loss():.4f}", flush=True)
        timer.resume()
    for micro in range(accum):
        _, loss = model(X, Y)
        X, Y = get_batch()
        (loss / accum).backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    timer.iteration(a.batch_size * accum)
    if it % 20 == 0:
        print(f"iter {it}: loss {loss.item():.4f}", flush=True)
timer.report()
