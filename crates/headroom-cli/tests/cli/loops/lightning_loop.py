# A PyTorch Lightning Trainer as its users run it: a LightningModule, a DataLoader,
# max_epochs=3. Its own timer is a callback at each training batch's end, and each epoch's
# own time from the epoch's start to its end. With --validate, a validation loop over a
# loader of its own after each epoch, which the timer leaves out.
import argparse, time
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
import lightning as L
from own_timer import OwnTimer

p = argparse.ArgumentParser()
p.add_argument("--batch-size", type=int, default=32)
p.add_argument("--max-epochs", type=int, default=3)
p.add_argument("--bar", action="store_true")
p.add_argument("--validate", action="store_true")
a = p.parse_args()


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 8))

    def training_step(self, batch, i):
        x, y = batch
        return nn.functional.cross_entropy(self.net(x), y)

    def validation_step(self, batch, i):
        x, y = batch
        self.log("val_loss", nn.functional.cross_entropy(self.net(x), y))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


class Own(L.Callback):
    def __init__(self):
        self.timer = OwnTimer()

    def on_train_epoch_start(self, trainer, module):
        self.epoch_start = time.perf_counter()

    def on_train_batch_end(self, trainer, module, outputs, batch, i):
        self.timer.iteration(batch[0].size(0))

    def on_validation_start(self, trainer, module):
        self.timer.pause()

    def on_validation_end(self, trainer, module):
        self.timer.resume()

    def on_train_epoch_end(self, trainer, module):
        print(f"own epoch {trainer.current_epoch + 1} time {time.perf_counter() - self.epoch_start:.4f}", flush=True)


torch.manual_seed(0)
data = TensorDataset(torch.randn(6400, 64), torch.randint(0, 8, (6400,)))
own = Own()
trainer = L.Trainer(
    max_epochs=a.max_epochs,
    accelerator="cpu",
    devices=1,
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=a.bar,
    enable_model_summary=False,
    callbacks=[own],
    num_sanity_val_steps=2 if a.validate else 0,
)
val = DataLoader(TensorDataset(torch.randn(12800, 64), torch.randint(0, 8, (12800,))), batch_size=256)
trainer.fit(Model(), DataLoader(data, batch_size=a.batch_size, shuffle=True), val if a.validate else None)
own.timer.report()
