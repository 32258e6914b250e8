# Inference with a Lightning Trainer: predict() over a DataLoader, which Lightning stops at its
# length. Its own timer is a callback at each predicted batch.
import argparse, time
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
import lightning as L
from own_timer import OwnTimer

p = argparse.ArgumentParser()
p.add_argument("--batch-size", type=int, default=64)
a = p.parse_args()


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 8))

    def predict_step(self, batch, i):
        return self.net(batch[0]).argmax(1)


class Own(L.Callback):
    def __init__(self):
        self.timer = OwnTimer()

    def on_predict_batch_end(self, trainer, module, outputs, batch, i, dataloader_idx=0):
        self.timer.iteration(batch[0].size(0))


own = Own()
trainer = L.Trainer(accelerator="cpu", devices=1, logger=False, enable_progress_bar=False, callbacks=[own])
trainer.predict(Model(), DataLoader(TensorDataset(torch.randn(64 * 200, 64)), batch_size=a.batch_size))
own.timer.report()
