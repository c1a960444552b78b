"""DistributedDataParallel: one spawned process per device, on one node or several.

In the run's main process `launch` only spawns and watches the ranks (strategies/launcher.py); each rank
then runs the one training loop with this strategy bound to its device (`run_rank`). Rendezvous is
torch.distributed's env:// (MASTER_ADDR/MASTER_PORT); global rank = node_rank * local_world + local_rank.
gloo without CUDA, nccl with it. Test hook: `TRAINCONSOLE_FAIL_RANK=R` with `TRAINCONSOLE_FAIL_AT_STEP=N`
makes global rank R raise at its N-th training step (used to prove a dead rank never hangs a run).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sized
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import Sampler

from trainconsole.protocol import RunDir

from ..errors import StrategyUnavailable
from . import launcher
from .base import Config, Strategy, given
from .buckets import GradientBuckets
from .devices import resolve
from .rank_sync import RankSync
from .rendezvous import rank_envs
from .samplers import RankSampler

#: How long a rank waits for the others: to join (another node not started fails the run), and at a
#: collective beyond a full-disk pause (`collective_timeout`). TRAINCONSOLE_DIST_TIMEOUT_S: tests shorten it.
TIMEOUT = timedelta(seconds=float(os.environ.get("TRAINCONSOLE_DIST_TIMEOUT_S") or 600))


class DistributedDataParallel(Strategy):
    """A rank of a DDP run (and, before `run_rank`, the launcher's description of all of them)."""

    name = "ddp"

    def __init__(self, config: Config) -> None:
        spec = config["strategy"]
        self.local_devices = resolve(config)
        self.nnodes, self.node_rank = spec["nnodes"], spec["node_rank"]
        self.local_rank = 0
        super().__init__(config, self.local_devices[0])
        self.backend = "nccl" if self.device.type == "cuda" else "gloo"
        self.sync: RankSync | None = None
        world, batch = self.world_size, config["train"]["batch_size"]
        if batch < world:
            raise StrategyUnavailable(f"train.batch_size = {batch} is smaller than the {world} ranks")
        if batch % world:
            self.warnings.append({"code": "batch_not_divisible", "hint": "pick a multiple of the rank count",
                                  "message": f"train.batch_size = {batch} over {world} ranks: each rank "
                                  f"takes {batch // world} (global batch {batch // world * world})"})

    # -- processes ------------------------------------------------------------------------------------
    @property
    def world_size(self) -> int:
        return self.nnodes * len(self.local_devices)

    @property
    def global_rank(self) -> int:
        return self.node_rank * len(self.local_devices) + self.local_rank

    @property
    def is_local_zero(self) -> bool:
        """Writes this node's `started` and final events into this node's own run log."""
        return self.local_rank == 0

    @property
    def devices(self) -> list[torch.device]:
        return list(self.local_devices)

    def launch(self, fn: Callable[..., Any], *args: Any, run_dir: RunDir | None = None, stop: Any = None,
               **kwargs: Any) -> Any:
        """Spawn one rank per local device, watch them, and return local rank 0's result."""
        envs = rank_envs(self.config["strategy"], len(self.local_devices))
        with tempfile.TemporaryDirectory(prefix="trainconsole-ranks-") as scratch:
            reports = (run_dir.path if run_dir is not None else Path(scratch)) / "ranks"
            call = launcher.Call(fn, args, given(kwargs, run_dir=run_dir), stop)
            return launcher.spawn_ranks(self, call, envs, reports)

    def run_rank(self, local_rank: int, fn: Callable[..., Any], args: tuple, kwargs: dict[str, Any]) -> Any:
        """In a rank's process: bind to its device, join the group, train; failures propagate as-is."""
        self.local_rank = local_rank
        self.device = self.local_devices[local_rank]
        self.setup_environment()
        result = fn(self, *args, **kwargs)
        self.teardown()  # skipped on failure: the launcher kills this process instead
        return result

    def setup_environment(self) -> None:
        """Threads, device, process group, and the stop/memory agreement (on a CPU group)."""
        threads = self.config["train"]["threads"]
        if self.device.type == "cuda":
            torch.cuda.set_device(self.device)
            threads = threads or max(1, (os.cpu_count() or 1) // len(self.local_devices))
        torch.set_num_threads(threads or 1)
        dist.init_process_group(self.backend, init_method="env://", rank=self.global_rank,
                                world_size=self.world_size, timeout=TIMEOUT)
        group = dist.new_group(backend="gloo") if self.backend == "nccl" else None
        for each in {None, group}:
            set_timeout(collective_timeout(self.config), each)
        self.sync = RankSync(self.device, group)
        self.fail_at = fault_step(self.global_rank)
        if self.config["train"].get("batch_finder"):  # each node searched alone: all take the smallest
            batch = torch.tensor([self.config["train"]["batch_size"]], dtype=torch.int64)
            dist.all_reduce(batch, op=dist.ReduceOp.MIN, group=group)
            self.config["train"]["batch_size"] = int(batch.item())

    def teardown(self) -> None:
        if dist.is_initialized():
            dist.destroy_process_group()

    def barrier(self) -> None:
        dist.barrier(group=self.sync.group if self.sync else None)

    # -- model and data -------------------------------------------------------------------------------
    def setup_module(self, model: nn.Module) -> nn.Module:
        """Move to this rank's device and wrap (DDP broadcasts rank 0's initial weights to all)."""
        model = model.to(self.device)
        return DDP(model, device_ids=[self.device.index] if self.device.type == "cuda" else None)

    def unwrap(self, model: nn.Module) -> nn.Module:
        return model.module if isinstance(model, DDP) else model

    def sampler(self, dataset: Sized, shuffle: bool, seed: int = 0) -> Sampler[int]:
        """This rank's shard; training shards are padded so every rank takes as many steps."""
        return RankSampler(dataset, self.world_size, self.global_rank, shuffle, seed, pad=shuffle)

    def local_batch_size(self, batch_size: int) -> int:
        return batch_size // self.world_size

    def local_num_workers(self, num_workers: int) -> int:
        """`data.num_workers` is for the node: split over its ranks, at least one each if any."""
        return max(1, num_workers // len(self.local_devices)) if num_workers else 0

    # -- metrics --------------------------------------------------------------------------------------
    def all_reduce(self, tensor: torch.Tensor, op: str = "sum") -> torch.Tensor:
        reduce_op = dist.ReduceOp.MAX if op == "max" else dist.ReduceOp.SUM
        dist.all_reduce(tensor, op=reduce_op)
        return tensor / self.world_size if op == "mean" else tensor

    def failed_ranks(self, failed: bool) -> list[int]:
        """One tiny all_gather of "did you fail?" on the CPU group."""
        flag = torch.tensor([1.0 if failed else 0.0], dtype=torch.float64)
        table = [torch.empty_like(flag) for _ in range(self.world_size)]
        dist.all_gather(table, flag, group=self._cpu_group)
        return [rank for rank, row in enumerate(table) if row.item() > 0]

    def all_finite(self, finite: bool) -> bool:
        flag = torch.tensor([0.0 if finite else 1.0], dtype=torch.float64)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX, group=self._cpu_group)
        return flag.item() == 0

    def gradient_buckets(self, params: list[nn.Parameter]) -> GradientBuckets:
        """Our own buckets, overlapping backward as DDP's do, that a failed rank can still pair."""
        return GradientBuckets(params, self.world_size)

    def sync_buffers(self, module: nn.Module) -> None:
        """Broadcast rank 0's buffers, one flat tensor per dtype (DDP's own broadcast, at a point every
        rank reaches: DDP's flag for it is cleared only when a forward finishes)."""
        by_dtype: dict[torch.dtype, list[torch.Tensor]] = {}
        for buffer in module.buffers():
            by_dtype.setdefault(buffer.dtype, []).append(buffer)
        with torch.no_grad():
            for buffers in by_dtype.values():
                flat = _flatten_dense_tensors(buffers)
                dist.broadcast(flat, src=0)
                for b, synced in zip(buffers, _unflatten_dense_tensors(flat, buffers), strict=True):
                    b.copy_(synced)

    @property
    def _cpu_group(self) -> Any:
        return self.sync.group if self.sync else None

    def reduce_stop(self, stop: bool, force: bool = False) -> bool:
        """Agreed stop: ranks meet every few steps (and at every `force`), never every step."""
        if not force and self.sync.steps + 1 == self.fail_at:
            raise RuntimeError(f"injected failure in rank {self.global_rank} at step {self.fail_at} "
                               "(TRAINCONSOLE_FAIL_RANK / TRAINCONSOLE_FAIL_AT_STEP)")
        return self.sync.agree(stop) if force else self.sync.step(stop)

    def report_memory(self, mem: dict[str, Any]) -> dict[str, Any]:
        """Every rank's memory (from the last agreement) in rank 0's `step` events."""
        return self.sync.memory(mem, len(self.local_devices)) if self.sync else mem

    def started_fields(self) -> dict[str, Any]:
        return {"backend": self.backend, "nnodes": self.nnodes, "node_rank": self.node_rank,
                "local_batch_size": self.local_batch_size(self.config["train"]["batch_size"])}


def fault_step(rank: int) -> int:
    """The step at which the test hook makes `rank` fail, or -1."""
    if os.environ.get("TRAINCONSOLE_FAIL_RANK", "") != str(rank):
        return -1
    return int(os.environ.get("TRAINCONSOLE_FAIL_AT_STEP", "1"))


def collective_timeout(config: Config) -> timedelta:
    """How long a rank waits at a collective: while rank 0 is paused on a full disk (it writes the
    checkpoints and events, `train.disk_full_wait_s` at most) the others wait at their next one, and
    must not time out first (the run would end on a gloo/NCCL timeout instead of pausing)."""
    return TIMEOUT + timedelta(seconds=config["train"]["disk_full_wait_s"])


def set_timeout(timeout: timedelta, group: Any) -> None:
    """`dist.set_timeout` where torch has it, `_set_pg_timeout` (its earlier, private name) before."""
    setter = getattr(dist, "set_timeout", None) or getattr(dist.distributed_c10d, "_set_pg_timeout", None)
    if setter is not None:
        setter(timeout, group)
