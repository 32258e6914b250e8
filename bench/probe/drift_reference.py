# mlp batch 64 timed 0.25 s, then a fixed 384x384 matmul 0.05 s, alternately for 60 s: does the reference follow the drift?
import torch, time, sys
sys.path.insert(0, __import__('os').path.join(__import__('os').path.dirname(__file__), '..'))
from torch_loop import Mlp
torch.set_num_threads(2)
m=Mlp(); opt=torch.optim.AdamW(m.parameters())
x=torch.randn(64,784); y=torch.randint(0,10,(64,))
a=torch.randn(384,384); b=torch.randn(384,384)
def step():
    opt.zero_grad(); l=torch.nn.functional.cross_entropy(m(x),y); l.backward(); opt.step()
def ref():
    torch.mm(a,b)
for _ in range(20): step(); ref()
def rate(f, dur):
    s=time.perf_counter(); n=0
    while time.perf_counter()-s<dur: f(); n+=1
    return n/(time.perf_counter()-s)
t0=time.time(); W=[];R=[]
while time.time()-t0<60:
    R.append(rate(ref,0.05)); W.append(64*rate(step,0.25))
import statistics as st
print('corr', st.correlation(W,R))
# windows of 1 s
print(' '.join(f'{w:.0f}/{r:.0f}' for w,r in zip(W[::8],R[::8])))
print('cv W',st.stdev(W)/st.mean(W),'cv ratio',st.stdev([w/r for w,r in zip(W,R)])/st.mean([w/r for w,r in zip(W,R)]))
