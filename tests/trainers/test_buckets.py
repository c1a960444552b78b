"""The gradient buckets across two real gloo ranks, through the sequence of attempts a capped DDP run meets:
rank 1 runs out of memory in the step's last backward, then again, after the micro-batch was halved, in a
micro-batch before the last (its buckets not armed), while rank 0 succeeds and starts every bucket. Each rank
must still post the same collectives in the same order, or rank 0 waits for ever (CI's hang of a capped DDP
run: the second failure found the first's buckets still counted as started and posted none)."""

from __future__ import annotations

import datetime
import os
import socket
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

from trainconsole.trainers.strategies.buckets import GradientBuckets

TIMEOUT_S = 20  # a pairing that fails shows as a gloo timeout, not a hang


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _attempt(model: nn.Module, buckets: GradientBuckets, x: torch.Tensor, parts: int,
             fail_at: int | None) -> list[int]:
    """One attempt as `trainconsole.trainers.builtin.step` makes it: micro-batches accumulate, the last one
    is armed;
    a failure
    ends the loop; every rank finishes its buckets then learns who failed."""
    model.zero_grad(set_to_none=True)
    buckets.attach()
    failed = False
    for i, xs in enumerate(x.tensor_split(parts)):
        if i == parts - 1:
            buckets.arm()
        if i == fail_at:
            failed = True
            break
        (model(xs).sum() / parts).backward()
    buckets.finish(failed)
    table = [torch.zeros(1) for _ in range(2)]
    dist.all_gather(table, torch.tensor([float(failed)]))
    return [r for r, f in enumerate(table) if f.item()]


def _setup(rank: int) -> tuple[nn.Module, torch.Tensor]:
    """The same initial model on every rank; each rank's own data."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))
    return model, torch.randn(8, 8) + rank


def _rank(rank: int, port: int, out: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=2, timeout=datetime.timedelta(seconds=TIMEOUT_S))
    try:
        model, x = _setup(rank)
        params = list(model.parameters())
        buckets = GradientBuckets(params, world_size=2, bucket_bytes=256)  # several buckets
        assert len(buckets.buckets) > 1
        seen = []
        # 1: one micro-batch, rank 1 fails in it (armed); 2: two micro-batches, rank 1 fails in the first
        # (not armed yet) while rank 0 arms and starts every bucket; 3: no one fails.
        for parts, fail_at in ((1, 0), (2, 0), (2, None)):
            seen.append(_attempt(model, buckets, x, parts, fail_at if rank == 1 else None))
        buckets.apply()
        torch.save({"seen": seen, "grads": [p.grad.clone() for p in params]}, f"{out}/rank{rank}.pt")
    finally:
        dist.destroy_process_group()


def test_ranks_pair_their_buckets_through_failures_before_and_after_arming(tmp_path: Path) -> None:
    mp.start_processes(_rank, args=(_free_port(), str(tmp_path)), nprocs=2, join=True, start_method="spawn")
    results = [torch.load(tmp_path / f"rank{r}.pt", weights_only=True) for r in range(2)]
    for result in results:
        assert result["seen"] == [[1], [1], []]
    # The third attempt averaged the gradients of both ranks' own data, as one DDP step would.
    expected = []
    for rank in range(2):
        model, x = _setup(rank)
        (model(x).sum() / 2).backward()  # two micro-batches of half weight each
        expected.append([p.grad for p in model.parameters()])
    for got in (results[0]["grads"], results[1]["grads"]):
        for g, a, b in zip(got, *expected, strict=True):
            torch.testing.assert_close(g, (a + b) / 2)
