# Sampling as nanoGPT's sample.py does it: the model's own generate() method calls the model once
# per new token, cropping its context; the script calls generate() once per batch of prompts.
import argparse
import torch
from torch import nn
from torch.nn import functional as F
from own_timer import OwnTimer

p = argparse.ArgumentParser()
p.add_argument("--num_samples", type=int, default=12)
p.add_argument("--batch", type=int, default=4)
p.add_argument("--max_new_tokens", type=int, default=24)
a = p.parse_args()
torch.manual_seed(0)


class TinyGPT(nn.Module):
    def __init__(self, vocab=256, d=64, block=32):
        super().__init__()
        self.block = block
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(block, d)
        layer = nn.TransformerEncoderLayer(d, 4, 4 * d, batch_first=True, norm_first=True)
        self.h = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(d, vocab)

    def forward(self, idx):
        t = idx.size(1)
        x = self.tok(idx) + self.pos(torch.arange(t))
        mask = nn.Transformer.generate_square_subsequent_mask(t)
        return self.head(self.h(x, mask=mask, is_causal=True))

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0):
        for _ in range(max_new_tokens):
            idx_cond = idx if idx.size(1) <= self.block else idx[:, -self.block:]
            logits = self(idx_cond)[:, -1, :] / temperature
            idx_next = torch.multinomial(F.softmax(logits, dim=-1), num_samples=1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


model = TinyGPT().eval()
timer = OwnTimer()
for k in range(a.num_samples):
    x = torch.randint(0, 256, (a.batch, 4))
    y = model.generate(x, a.max_new_tokens)
    timer.iteration(a.batch)
print(y.shape, flush=True)
timer.report()
