# Data-parallel training as `torchrun --nproc_per_node=2` launches it: two CPU ranks (gloo),
# a DistributedSampler, DDP; rank 0 keeps the own timer (its own samples: each rank trains
# its half of every step).
import argparse
import torch, torch.distributed as dist
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler
from own_timer import OwnTimer

p = argparse.ArgumentParser()
p.add_argument("--batch-size", type=int, default=32)
p.add_argument("--epochs", type=int, default=2)
a = p.parse_args()
dist.init_process_group("gloo")
torch.manual_seed(0)
ds = TensorDataset(torch.randn(8192, 64), torch.randint(0, 8, (8192,)))
sampler = DistributedSampler(ds)
loader = DataLoader(ds, batch_size=a.batch_size, sampler=sampler)
model = nn.parallel.DistributedDataParallel(
    nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 8))
)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
timer = OwnTimer()
for epoch in range(a.epochs):
    sampler.set_epoch(epoch)
    for x, y in loader:
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        timer.iteration(x.size(0))
    if dist.get_rank() == 0:
        print(f"epoch {epoch + 1} done", flush=True)
if dist.get_rank() == 0:
    timer.report()
dist.destroy_process_group()
