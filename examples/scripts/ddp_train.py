"""A torchrun-style DDP training script, unchanged from what `torchrun` runs; trainconsole reads its prints.

    trainconsole run --script examples/scripts/ddp_train.py --nproc 2 -- --epochs 5
    torchrun --standalone --nproc-per-node 2 examples/scripts/ddp_train.py --epochs 5   # the same, bare

env:// rendezvous (torchrun sets RANK, WORLD_SIZE, MASTER_ADDR...), gloo on CPU or nccl on GPUs,
DistributedSampler, DataLoader workers. Rank 0 prints `epoch E step S loss: X` and `val_loss: ... val_acc:
...` lines, which trainconsole's default patterns turn into `step` and `eval` events. A SIGTERM (`trainconsole
stop`) finishes the step on every rank and exits cleanly; `trainconsole kill` takes every process.
"""

import argparse
import os
import signal

import torch
import torch.distributed as dist
from sklearn.datasets import load_digits
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

STOP = []


def datasets() -> tuple[TensorDataset, TensorDataset]:
    digits = load_digits()
    x = torch.tensor(digits.data, dtype=torch.float32) / 16.0
    y = torch.tensor(digits.target)
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(0))
    split = int(0.8 * len(y))
    return TensorDataset(x[perm[:split]], y[perm[:split]]), TensorDataset(x[perm[split:]], y[perm[split:]])


def evaluate(model: nn.Module, data: TensorDataset, device: torch.device) -> tuple[float, float]:
    x, y = (t.to(device) for t in data.tensors)
    with torch.no_grad():
        logits = model(x)
    return nn.functional.cross_entropy(logits, y).item(), (logits.argmax(1) == y).float().mean().item()


def should_stop() -> bool:
    flag = torch.tensor([float(bool(STOP))], device=DEVICE)
    dist.all_reduce(flag)  # every rank stops at the same step, or the others would wait forever
    return bool(flag.item())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32, help="per rank")
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda signum, frame: STOP.append(signum))
    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    rank = dist.get_rank()
    train, val = datasets()
    sampler = DistributedSampler(train, shuffle=True, seed=0)
    loader = DataLoader(train, batch_size=args.batch_size, sampler=sampler, num_workers=args.workers,
                        persistent_workers=args.workers > 0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).to(DEVICE)
    ddp = DistributedDataParallel(model, device_ids=[DEVICE.index] if DEVICE.type == "cuda" else None)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)
    step = 0
    for epoch in range(1, args.epochs + 1):
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = nn.functional.cross_entropy(ddp(x.to(DEVICE)), y.to(DEVICE))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            if rank == 0 and step % 5 == 0:
                print(f"epoch {epoch} step {step} loss: {loss.item():.4f}", flush=True)
            if should_stop():
                break
        if rank == 0:
            val_loss, val_acc = evaluate(model, val, DEVICE)
            print(f"epoch {epoch} val_loss: {val_loss:.4f} val_acc: {val_acc:.4f}", flush=True)
        if STOP:
            break
    if rank == 0:
        print("stopped by SIGTERM" if STOP else "done", flush=True)
    dist.destroy_process_group()


LOCAL_RANK = int(os.environ.get("LOCAL_RANK", "0"))
DEVICE = torch.device(f"cuda:{LOCAL_RANK}" if torch.cuda.is_available() else "cpu")
if DEVICE.type == "cuda":
    torch.cuda.set_device(DEVICE)

if __name__ == "__main__":
    main()
