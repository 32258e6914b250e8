# A hand-written loop over a transformers model built from a config, batches sliced from a
# token tensor and passed by keyword, as custom fine-tuning scripts do (`--dict` passes them as
# `model(**batch)`), with optional gradient accumulation.
import argparse
import torch
from transformers import GPT2Config, GPT2LMHeadModel
from own_timer import OwnTimer

p = argparse.ArgumentParser()
p.add_argument("--per_device_train_batch_size", type=int, default=8)
p.add_argument("--max_steps", type=int, default=60)
p.add_argument("--gradient_accumulation_steps", type=int, default=1)
p.add_argument("--dict", action="store_true")
p.add_argument("--infer", action="store_true", help="score the batches under inference_mode, no training")
a = p.parse_args()
torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_head=2, n_embd=64, vocab_size=500, n_positions=64))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
n = a.per_device_train_batch_size
k = a.gradient_accumulation_steps
tokens = torch.randint(0, 500, (n * k * a.max_steps, 64))
timer = OwnTimer()
model.train()
if a.infer:
    model.eval()
    with torch.inference_mode():
        for step in range(a.max_steps):
            b = tokens[step * n:(step + 1) * n]
            out = model(input_ids=b, attention_mask=torch.ones_like(b))
            timer.iteration(n)
    timer.report()
    raise SystemExit
for step in range(a.max_steps):
    for micro in range(k):
        at = (step * k + micro) * n
        b = tokens[at:at + n]
        batch = {"input_ids": b, "attention_mask": torch.ones_like(b), "labels": b}
        out = model(**batch) if a.dict else model(input_ids=b, attention_mask=batch["attention_mask"], labels=b)
        (out.loss / k).backward()
    opt.step()
    opt.zero_grad()
    timer.iteration(n * k)
    if step % 20 == 0:
        print(f"step {step} loss {out.loss.item():.3f}", flush=True)
timer.report()
