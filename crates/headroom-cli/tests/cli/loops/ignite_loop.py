# PyTorch Ignite's supervised trainer, as its users (and MONAI's) write it: an Engine that runs
# the loop over a DataLoader, handlers on its events, an evaluator run over a validation loader
# after each epoch. The loop's own meter runs from the Engine's events: iterations, and each
# epoch's time from its start to its end (before its validation).
import argparse
import time
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from ignite.engine import Events, create_supervised_evaluator, create_supervised_trainer
from ignite.metrics import Accuracy
from own_timer import OwnTimer

p = argparse.ArgumentParser()
p.add_argument("--batch-size", type=int, default=32)
p.add_argument("--epochs", type=int, default=3)
a = p.parse_args()
torch.manual_seed(0)


def loader(n, batch, shuffle):
    data = TensorDataset(torch.randn(n, 128), torch.randint(0, 10, (n,)))
    return DataLoader(data, batch_size=batch, shuffle=shuffle)


train, val = loader(1000, a.batch_size, True), loader(2000, 200, False)
model = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                      nn.Linear(512, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
trainer = create_supervised_trainer(model, opt, nn.CrossEntropyLoss())
evaluator = create_supervised_evaluator(model, metrics={"acc": Accuracy()})
meter = OwnTimer()
began = {}


@trainer.on(Events.ITERATION_COMPLETED)
def tick(engine):
    meter.iteration(engine.state.batch[0].shape[0])


@trainer.on(Events.EPOCH_STARTED)
def epoch_began(engine):
    meter.resume()
    began["t"] = time.perf_counter()


@trainer.on(Events.EPOCH_COMPLETED)
def validate(engine):
    meter.pause()
    took = time.perf_counter() - began["t"]
    print(f"own epoch {engine.state.epoch} took {took:.4f} s", flush=True)
    evaluator.run(val)
    print(f"epoch {engine.state.epoch} acc {evaluator.state.metrics['acc']:.3f}", flush=True)


trainer.run(train, max_epochs=a.epochs)
meter.report()
