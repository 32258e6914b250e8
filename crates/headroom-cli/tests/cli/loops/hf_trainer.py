# A Hugging Face Trainer as its users run it: a tiny BERT built from a config (no download),
# a map-style dataset, gradient accumulation 2. Its own timer is a callback at each optimizer
# step, and the Trainer's own train_samples_per_second is printed too. With --validate, an
# evaluation after each epoch, which the timer leaves out.
import argparse, tempfile
import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments, TrainerCallback
from own_timer import OwnTimer

p = argparse.ArgumentParser()
p.add_argument("--batch-size", type=int, default=16)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--validate", action="store_true")
a = p.parse_args()
torch.manual_seed(0)
config = BertConfig(vocab_size=512, hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128, max_position_embeddings=64, num_labels=4)
model = BertForSequenceClassification(config)


class Data(torch.utils.data.Dataset):
    def __init__(self, n=1600):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return {"input_ids": torch.randint(0, 512, (32,), generator=g), "labels": int(i % 4)}


class Own(TrainerCallback):
    def __init__(self):
        self.timer = OwnTimer()

    def on_step_end(self, args, state, control, **kw):
        self.timer.iteration(args.per_device_train_batch_size * args.gradient_accumulation_steps)


own = Own()


class Timed(Trainer):
    def evaluate(self, *args, **kwargs):
        own.timer.pause()
        try:
            return super().evaluate(*args, **kwargs)
        finally:
            own.timer.resume()


args = TrainingArguments(
    output_dir=tempfile.mkdtemp(),
    per_device_train_batch_size=a.batch_size,
    gradient_accumulation_steps=2,
    num_train_epochs=a.epochs,
    logging_strategy="no",
    save_strategy="no",
    report_to=[],
    use_cpu=True,
    disable_tqdm=True,
    dataloader_num_workers=0,
    eval_strategy="epoch" if a.validate else "no",
    per_device_eval_batch_size=64,
)
trainer = Timed(model=model, args=args, train_dataset=Data(), eval_dataset=Data(3200) if a.validate else None, callbacks=[own])
result = trainer.train()
print(f"trainer: train_samples_per_second {result.metrics['train_samples_per_second']}", flush=True)
own.timer.report()
