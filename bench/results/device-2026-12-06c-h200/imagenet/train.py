
import argparse, time, torch, torchvision
from torch import nn
import torchvision.transforms as T
p = argparse.ArgumentParser()
p.add_argument("-b", "--batch-size", type=int, default=256)
p.add_argument("-j", "--workers", type=int, default=12)
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--iters", type=int, default=1000000)
p.add_argument("--print-freq", type=int, default=10)
a = p.parse_args()

class Meter:
    def __init__(s): s.n = 0; s.sum = 0.0; s.val = 0.0
    def update(s, v): s.val = v; s.sum += v; s.n += 1
    @property
    def avg(s): return s.sum / max(s.n, 1)

tf = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(),
                T.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])])
data = torchvision.datasets.FakeData(size=a.batch_size * min(a.iters, 200), image_size=(3, 256, 256), transform=tf)
loader = torch.utils.data.DataLoader(data, batch_size=a.batch_size, shuffle=True, num_workers=a.workers, pin_memory=True)
model = torchvision.models.resnet50().cuda()
criterion = nn.CrossEntropyLoss().cuda()
opt = torch.optim.SGD(model.parameters(), 0.1, momentum=0.9, weight_decay=1e-4)
first = last = None; samples = 0; done = 0
for epoch in range(a.epochs):
    batch_time = Meter(); end = time.time()
    for i, (images, target) in enumerate(loader):
        images = images.cuda(non_blocking=True); target = target.cuda(non_blocking=True)
        loss = criterion(model(images), target)
        opt.zero_grad(); loss.backward(); opt.step()
        torch.cuda.synchronize()
        now = time.perf_counter()
        if first is None: first = now
        else: samples += images.size(0)
        last = now; done += 1
        batch_time.update(time.time() - end); end = time.time()
        if i % a.print_freq == 0:
            print(f"Epoch: [{epoch}][{i:4d}/{len(loader)}]\tTime {batch_time.val:6.3f} ({batch_time.avg:6.3f})\tLoss {loss.item():.4f}", flush=True)
        if done >= a.iters: break
    if done >= a.iters: break
print(f"own: iterations {done} samples/s {samples / (last - first):.3f}", flush=True)
