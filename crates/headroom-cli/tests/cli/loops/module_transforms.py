# A Dataset whose transforms are modules (as torchvision's are), read by two DataLoader
# workers: their module calls are no iteration of the loop.
import argparse
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset
from own_timer import OwnTimer


class Images(Dataset):
    def __init__(self):
        self.transform = nn.Sequential(nn.Identity(), nn.Dropout(0.0))

    def __len__(self):
        return 8192

    def __getitem__(self, i):
        return self.transform(torch.randn(3, 16, 16)), i % 4


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--batch-size", type=int, default=64)
    a = p.parse_args()
    loader = DataLoader(Images(), batch_size=a.batch_size, num_workers=2)
    model = nn.Sequential(nn.Flatten(), nn.Linear(768, 512), nn.ReLU(), nn.Linear(512, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    timer = OwnTimer()
    for epoch in range(2):
        for x, y in loader:
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
            timer.iteration(x.size(0))
    timer.report()
