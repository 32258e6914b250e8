# One PyTorch loop at mlp batch 64, its samples/s every 0.5 s for 60 s: how the machine itself drifts. ARG: threads.
import torch, time, sys
sys.path.insert(0, __import__('os').path.join(__import__('os').path.dirname(__file__), '..'))
from torch_loop import Mlp
torch.set_num_threads(int(sys.argv[1]) if len(sys.argv)>1 else 2)
m=Mlp(); opt=torch.optim.AdamW(m.parameters())
x=torch.randn(64,784); y=torch.randint(0,10,(64,))
def step():
    opt.zero_grad(); l=torch.nn.functional.cross_entropy(m(x),y); l.backward(); opt.step()
for _ in range(20): step()
t0=time.time(); out=[]
while time.time()-t0<60:
    s=time.perf_counter(); n=0
    while time.perf_counter()-s<0.5: step(); n+=1
    out.append(64*n/(time.perf_counter()-s))
print(' '.join(f'{v:.0f}' for v in out))
import statistics as st; print('mean',st.mean(out),'cv',st.stdev(out)/st.mean(out))
