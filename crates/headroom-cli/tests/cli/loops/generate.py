# Batched generation with a transformers model built from a config: the script's loop is one
# generate() call per batch of prompts; each call runs the model once per new token.
import argparse
import torch
from transformers import GPT2Config, GPT2LMHeadModel
from own_timer import OwnTimer

p = argparse.ArgumentParser()
p.add_argument("--batch_size", type=int, default=8)
p.add_argument("--batches", type=int, default=12)
p.add_argument("--max_new_tokens", type=int, default=16)
a = p.parse_args()
torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_head=2, n_embd=64, vocab_size=500, n_positions=128)).eval()
timer = OwnTimer()
for i in range(a.batches):
    prompts = torch.randint(0, 500, (a.batch_size, 12))
    with torch.no_grad():
        out = model.generate(prompts, attention_mask=torch.ones_like(prompts), max_new_tokens=a.max_new_tokens,
                             min_new_tokens=a.max_new_tokens, do_sample=False, pad_token_id=0)
    timer.iteration(a.batch_size)
print(f"generated {out.shape}", flush=True)
timer.report()
