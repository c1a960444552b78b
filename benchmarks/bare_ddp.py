"""The bare-PyTorch DDP baseline: `mp.spawn` + gloo + DistributedDataParallel, nothing else.

Same model (trainconsole.trainers.builtin.models) and data (trainconsole.trainers.builtin.data, synthetic
by default) as the
trainer. Each rank
pre-builds its shard's batches in memory (every `world`-th sample, like DistributedSampler) and trains
with plain SGD — no events, no meter, no checkpoints. Rank 0 prints `{"samples_per_s": ...}`, counted
over all ranks (global batch = batch per rank × ranks), median of --repeat timed runs after --warmup.

    python benchmarks/bare_ddp.py --ranks 2 --threads 1 --batch-size 128 --steps 150
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from bare_loop import run_steps  # noqa: E402  (the same plain SGD step as the single-process baseline)

from trainconsole.protocol import defaults  # noqa: E402
from trainconsole.trainers.builtin import data, models
from trainconsole.trainers.strategies.rendezvous import free_port  # noqa: E402


def parse_args() -> argparse.Namespace:
    """Ranks, threads per rank, batch per rank, steps; the rest matches the trainer's defaults."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    p.add_argument("--batch-size", type=int, default=128, help="per rank")
    p.add_argument("--steps", type=int, default=150, help="timed steps per repeat")
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--model", default="small_cnn")
    p.add_argument("--shape", default="1,8,8", help="synthetic C,H,W")
    p.add_argument("--samples", type=int, default=65536)
    return p.parse_args()


def make_config(args: argparse.Namespace) -> dict:
    """The trainer config this baseline mirrors."""
    config = defaults()
    config["model"]["name"] = args.model
    shape = [int(n) for n in args.shape.split(",")]
    config["data"].update(name="synthetic", shape=shape, samples=args.samples)
    return config


def worker(rank: int, args: argparse.Namespace, port: int) -> None:
    """One rank: join the gloo group, build its batches, train, and (rank 0) print the rate."""
    torch.set_num_threads(args.threads)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=args.ranks)
    config = make_config(args)
    torch.manual_seed(config["train"]["seed"])
    split = data.build(config)
    x, y = (t[rank :: args.ranks] for t in split.train.tensors)
    b = args.batch_size
    batches = [(x[i : i + b], y[i : i + b]) for i in range(0, len(x) - b + 1, b)]
    model = models.build(config, split.num_classes, split.input_shape)
    model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=config["train"]["lr"], momentum=config["train"]["momentum"])
    run_steps(model, opt, batches, args.warmup)
    rates = []
    for _ in range(args.repeat):
        dist.barrier()
        start = time.perf_counter()
        run_steps(model, opt, batches, args.steps)
        rates.append(args.steps * b * args.ranks / (time.perf_counter() - start))
    if rank == 0:
        print(json.dumps({"samples_per_s": statistics.median(rates), "runs": rates, "ranks": args.ranks,
                          "threads": args.threads, "batch_per_rank": b}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    cli = parse_args()
    mp.spawn(worker, args=(cli, free_port("127.0.0.1")), nprocs=cli.ranks)
