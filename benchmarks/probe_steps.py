"""A CPU script of small steps (where a per-step cost shows most), knowing nothing of trainconsole: a
2-layer MLP of width 64 on batches of 16 from a DataLoader, SGD; it prints `step N loss: X` every 100
steps and last its own steps/s (after 200 warm-up steps) as JSON."""

import argparse
import json
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=4000)
parser.add_argument("--threads", type=int, default=1)
args = parser.parse_args()
torch.set_num_threads(args.threads)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
data = TensorDataset(torch.randn(4096, 64), torch.randint(0, 10, (4096,)))
loader = DataLoader(data, batch_size=16, shuffle=True)
step, start = 0, 0.0
while step < args.steps:
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if step == 200:
            start = time.perf_counter()
        if step % 100 == 0:
            print(f"step {step} loss: {loss.item():.4f}", flush=True)
        if step >= args.steps:
            break
print(json.dumps({"steps_per_s": (args.steps - 200) / (time.perf_counter() - start)}), flush=True)
