"""A user's training script, as the script-overhead benchmark runs it bare and under trainconsole.

A small CNN (2 conv + 2 fc) on pre-built synthetic batches, plain SGD. It prints `step N loss: X` every
--print-every steps, as scripts do, and last one JSON line: its own samples/s over the steps after
--warmup. Nothing in it knows about trainconsole.

    python benchmarks/script_train.py --steps 200 --threads 2 [--device cuda]
"""

from __future__ import annotations

import argparse
import json
import time

import torch
from torch import nn


def model() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 8 * 8, 128), nn.ReLU(), nn.Linear(128, 10),
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--print-every", type=int, default=10)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    device = torch.device(args.device)
    batches = [(torch.randn(args.batch_size, 3, 32, 32, device=device),
                torch.randint(0, 10, (args.batch_size,), device=device)) for _ in range(16)]
    net = model().to(device)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    start = 0.0
    for step in range(1, args.steps + 1):
        if step == args.warmup + 1:
            if device.type == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
        x, y = batches[step % len(batches)]
        loss = nn.functional.cross_entropy(net(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step % args.print_every == 0:
            print(f"step {step} loss: {loss.item():.4f}", flush=True)
    if device.type == "cuda":
        torch.cuda.synchronize()
    rate = (args.steps - args.warmup) * args.batch_size / (time.perf_counter() - start)
    print(json.dumps({"samples_per_s": rate}), flush=True)


if __name__ == "__main__":
    main()
