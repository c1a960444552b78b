"""The bare-PyTorch baseline for the trainer-overhead benchmark.

Builds the same model (trainconsole.trainers.builtin.models) and the same data
(trainconsole.trainers.builtin.data, synthetic
or digits) as the
trainer, pre-builds every batch in memory, and trains with plain SGD — no events, no meter, no
checkpoints. Prints `{"samples_per_s": ...}` (median over --repeat timed runs, after --warmup steps).

    python benchmarks/bare_loop.py --model resnet18 --batch-size 64 --steps 60 --threads 2
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from trainconsole.protocol import defaults  # noqa: E402
from trainconsole.trainers.builtin import data, models


def parse_args() -> argparse.Namespace:
    """Model, batch, steps and threads; the rest matches the trainer's defaults."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="small_cnn", help="small_cnn or a torchvision model (resnet18)")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--steps", type=int, default=60, help="timed steps per repeat")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    p.add_argument("--repeat", type=int, default=3, help="timed runs; the median is printed")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch's default)")
    p.add_argument("--data", default="synthetic", choices=("synthetic", "digits"))
    p.add_argument("--shape", default="3,32,32", help="synthetic C,H,W")
    p.add_argument("--samples", type=int, default=2048, help="synthetic sample count")
    return p.parse_args()


def make_config(args: argparse.Namespace) -> dict:
    """The trainer config this baseline mirrors (so `data.build` gives the very same tensors)."""
    config = defaults()
    config["model"]["name"] = args.model
    config["data"].update(name=args.data, shape=[int(n) for n in args.shape.split(",")], samples=args.samples)
    config["train"].update(batch_size=args.batch_size, threads=args.threads)
    return config


def main() -> None:
    """Train with pre-built batches and print the median samples/s as JSON."""
    args = parse_args()
    config = make_config(args)
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(config["train"]["seed"])
    split = data.build(config)
    x, y = split.train.tensors
    b = args.batch_size
    batches = [(x[i : i + b], y[i : i + b]) for i in range(0, len(x) - b + 1, b)]  # full batches only
    model = models.build(config, split.num_classes, split.input_shape)
    opt = torch.optim.SGD(model.parameters(), lr=config["train"]["lr"], momentum=config["train"]["momentum"])
    model.train()
    run_steps(model, opt, batches, args.warmup)
    rates = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        run_steps(model, opt, batches, args.steps)
        rates.append(args.steps * b / (time.perf_counter() - start))
    print(json.dumps({"samples_per_s": statistics.median(rates), "runs": rates, "model": args.model,
                      "batch_size": b, "threads": torch.get_num_threads()}))


def run_steps(model: torch.nn.Module, opt: torch.optim.Optimizer, batches: list, steps: int) -> None:
    """`steps` plain SGD steps, cycling through the batches."""
    for i in range(steps):
        x, y = batches[i % len(batches)]
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
