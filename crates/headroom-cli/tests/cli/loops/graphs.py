# A graph-classification loop as PyTorch Geometric's examples write it: mini-batches of whole
# graphs from its DataLoader (a `Batch`: every graph's nodes stacked, `batch` naming each node's
# graph), a GCN over (x, edge_index), pooled per graph; 650 graphs, so the last batch is partial.
# The batch is graphs, not nodes.
import argparse
import torch
import torch.nn.functional as F
from torch_geometric.datasets import FakeDataset
from torch_geometric.loader import DataLoader
from torch_geometric.nn import GCNConv, global_mean_pool
from own_timer import OwnTimer

p = argparse.ArgumentParser()
p.add_argument("--batch-size", type=int, default=32)
p.add_argument("--epochs", type=int, default=3)
a = p.parse_args()
torch.manual_seed(0)
data = FakeDataset(num_graphs=650, avg_num_nodes=24, num_channels=16, num_classes=4)
loader = DataLoader(data, batch_size=a.batch_size, shuffle=True)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = GCNConv(16, 128)
        self.conv2 = GCNConv(128, 128)
        self.head = torch.nn.Linear(128, 4)

    def forward(self, x, edge_index, batch):
        x = self.conv1(x, edge_index).relu()
        x = self.conv2(x, edge_index).relu()
        return self.head(global_mean_pool(x, batch))


model = Net()
opt = torch.optim.Adam(model.parameters(), lr=0.01)
meter = OwnTimer()
for epoch in range(a.epochs):
    model.train()
    for g in loader:
        opt.zero_grad()
        loss = F.cross_entropy(model(g.x, g.edge_index, g.batch), g.y)
        loss.backward()
        opt.step()
        meter.iteration(g.num_graphs)
    print(f"Epoch {epoch + 1:03d}, loss {loss.item():.4f}", flush=True)
meter.report()
