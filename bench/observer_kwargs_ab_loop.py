# The loop bench/observer_site_ab.py times: a step is next to nothing but the loop, so the
# observer's own cost per step shows; "kw" passes the input by keyword.
import sys, time, torch
from torch import nn
torch.manual_seed(0)
kw = len(sys.argv) > 1 and sys.argv[1] == "kw"
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 8)
    def forward(self, x=None):
        return self.a(x)
m = M()
opt = torch.optim.SGD(m.parameters(), lr=0.01)
x = torch.randn(1, 8)
times = []
for i in range(3000):
    t = time.perf_counter()
    xb = x.clone()
    out = m(x=xb) if kw else m(xb)
    out.sum().backward()
    opt.step()
    opt.zero_grad()
    times.append(time.perf_counter() - t)
times = sorted(times[100:])
print(f"{times[len(times)//2]*1e6:.1f}")
