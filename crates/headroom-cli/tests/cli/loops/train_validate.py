# The shape of the classic ImageNet training script: per epoch, train() over one DataLoader
# (a partial last batch), then validate() over another under no_grad in eval mode, with a
# batch-time meter that runs only while training, as that script's `Time` column does. With
# --steps-per-epoch N, each epoch breaks out of its pass after N iterations; with --val-every N,
# it also validates every N iterations inside the epoch; with --prefetcher, batches come through a
# prefetcher that asks the loader for the next batch before the current one trains (apex's
# ImageNet example, timm's PrefetchLoader), so the pass ends before its last batch has trained.
# Each epoch's own samples/s: its samples over its time less its validations inside it.
import argparse
import time
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from own_timer import OwnTimer

p = argparse.ArgumentParser()
p.add_argument("-b", "--batch-size", type=int, default=32)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--steps-per-epoch", type=int, default=0)
p.add_argument("--val-every", type=int, default=0)
p.add_argument("--prefetcher", action="store_true")
a = p.parse_args()
torch.manual_seed(0)


def loader(n, batch, shuffle):
    data = TensorDataset(torch.randn(n, 128), torch.randint(0, 10, (n,)))
    return DataLoader(data, batch_size=batch, shuffle=shuffle, num_workers=a.workers)


train_loader = loader(1000, a.batch_size, True)
val_loader = loader(4000, 200, False)
model = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
meter = OwnTimer()


class Prefetcher:
    """Holds the next batch while the current one trains."""

    def __init__(self, loader):
        self.it = iter(loader)
        self.preload()

    def preload(self):
        try:
            self.following = next(self.it)
        except StopIteration:
            self.following = None

    def next(self):
        batch = self.following
        if batch is not None:
            self.preload()
        return batch


def batches():
    if not a.prefetcher:
        yield from train_loader
        return
    fetcher = Prefetcher(train_loader)
    batch = fetcher.next()
    while batch is not None:
        yield batch
        batch = fetcher.next()


def train(epoch):
    model.train()
    meter.resume()
    began, samples, inside = time.perf_counter(), 0, 0.0
    for i, (images, target) in enumerate(batches()):
        if a.steps_per_epoch and i >= a.steps_per_epoch:
            break
        if a.val_every and i and i % a.val_every == 0:
            meter.pause()
            at = time.perf_counter()
            validate()
            inside += time.perf_counter() - at
            model.train()
            meter.resume()
        loss = criterion(model(images), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        meter.iteration(images.size(0))
        samples += images.size(0)
        if i % 10 == 0:
            print(f"Epoch: [{epoch}][{i:>3}/{len(train_loader)}]\tLoss {loss.item():.4f}", flush=True)
    meter.pause()
    spent = time.perf_counter() - began - inside
    print(f"own epoch {epoch + 1} samples/s {samples / spent:.1f}", flush=True)


def validate():
    model.eval()
    correct = 0
    with torch.no_grad():
        for images, target in val_loader:
            correct += (model(images).argmax(1) == target).sum().item()
    print(f" * Acc@1 {100.0 * correct / len(val_loader.dataset):.3f}", flush=True)


for epoch in range(a.epochs):
    train(epoch)
    validate()
meter.report()
