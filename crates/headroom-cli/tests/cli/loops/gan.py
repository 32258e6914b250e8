# A DCGAN-shaped loop: a discriminator and a generator, each with its own optimizer, three
# backward calls per iteration, batches from a DataLoader whose last batch is partial.
import argparse
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from own_timer import OwnTimer

p = argparse.ArgumentParser()
p.add_argument("--batchSize", type=int, default=128)
p.add_argument("--niter", type=int, default=3)
a = p.parse_args()
torch.manual_seed(0)
nz = 32
dataset = TensorDataset(torch.randn(128 * 150 + 104, 1, 16, 16))
loader = DataLoader(dataset, batch_size=a.batchSize, shuffle=True)
netG = nn.Sequential(nn.Flatten(), nn.Linear(nz, 512), nn.ReLU(), nn.Linear(512, 256), nn.Unflatten(1, (1, 16, 16)))
netD = nn.Sequential(nn.Flatten(), nn.Linear(256, 512), nn.LeakyReLU(0.2), nn.Linear(512, 1))
criterion = nn.BCEWithLogitsLoss()
optD = torch.optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
optG = torch.optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))
timer = OwnTimer()
for epoch in range(a.niter):
    for i, (real,) in enumerate(loader):
        b = real.size(0)
        netD.zero_grad()
        errD_real = criterion(netD(real), torch.ones(b, 1))
        errD_real.backward()
        fake = netG(torch.randn(b, nz, 1, 1))
        errD_fake = criterion(netD(fake.detach()), torch.zeros(b, 1))
        errD_fake.backward()
        optD.step()
        netG.zero_grad()
        errG = criterion(netD(fake), torch.ones(b, 1))
        errG.backward()
        optG.step()
        timer.iteration(b)
    print(f"[{epoch}/{a.niter}][{i}/{len(loader)}] Loss_D: {(errD_real + errD_fake).item():.4f} Loss_G: {errG.item():.4f}", flush=True)
timer.report()
