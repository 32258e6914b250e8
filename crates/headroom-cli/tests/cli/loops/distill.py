# Knowledge distillation, as DeiT-style and HF distillation scripts write it: a frozen teacher
# (eval mode, under no_grad) called on each batch before the student, whose loss mixes the
# labels and the teacher's soft targets. With --ema the teacher is instead a momentum copy of
# the student (mean teacher, BYOL/DINO style), left in train mode and updated after each step.
import argparse
import copy
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset
from own_timer import OwnTimer

p = argparse.ArgumentParser()
p.add_argument("--batch-size", type=int, default=64)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--ema", action="store_true")
a = p.parse_args()
torch.manual_seed(0)
x = torch.randn(64 * 40 + 17, 128)
y = torch.randint(0, 10, (len(x),))
loader = DataLoader(TensorDataset(x, y), batch_size=a.batch_size, shuffle=True)
student = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 10))
if a.ema:
    teacher = copy.deepcopy(student)
    for q in teacher.parameters():
        q.requires_grad_(False)
else:
    teacher = nn.Sequential(nn.Linear(128, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
    teacher.eval()
opt = torch.optim.SGD(student.parameters(), lr=0.05, momentum=0.9)
timer = OwnTimer()
for epoch in range(a.epochs):
    student.train()
    for xb, yb in loader:
        with torch.no_grad():
            soft = teacher(xb)
        out = student(xb)
        loss = F.cross_entropy(out, yb) + F.kl_div(
            F.log_softmax(out / 2.0, dim=1), F.softmax(soft / 2.0, dim=1), reduction="batchmean")
        opt.zero_grad()
        loss.backward()
        opt.step()
        if a.ema:
            with torch.no_grad():
                for t, s in zip(teacher.parameters(), student.parameters()):
                    t.mul_(0.99).add_(s, alpha=0.01)
        timer.iteration(xb.size(0))
    print(f"epoch {epoch} loss {loss.item():.4f}", flush=True)
timer.report()
