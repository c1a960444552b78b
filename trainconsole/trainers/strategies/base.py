"""The strategy interface: the small object that owns everything that differs between strategies.

The training loop (trainconsole/trainers/builtin/loop.py) is the same for every strategy; a strategy only
decides
where the
model and batches live, how the model is wrapped, which samples each process sees, how metrics are
combined across processes, and which process writes events and checkpoints (global rank 0).
Modelled on Lightning Fabric's `strategies/single_device.py` and `strategies/dp.py`.

How the other strategies fit:
- dp: `setup_module` wraps in `nn.DataParallel`; `unwrap` returns `.module`; batches go to devices[0].
- ddp: `launch` spawns one process per device and calls `setup_environment` in each
  (`init_process_group`), `sampler` returns a `DistributedSampler`, `local_batch_size` divides the global
  batch, `all_reduce` / `barrier` use torch.distributed, `is_global_zero` is rank 0, `reduce_stop`
  makes all ranks agree on a stop.
- model_parallel: `setup_module` splits the model into stages; `batch_to_device` puts inputs on the first
  stage's device and targets on the last one's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sized
from typing import Any, TypeVar

import torch
from torch import nn
from torch.utils.data import Sampler

from trainconsole.protocol import Config, RunDir
from trainconsole.protocol.shapes import Mem

R = TypeVar("R")


def given(kwargs: dict[str, Any], **named: Any) -> dict[str, Any]:
    """`kwargs` with those of `named` that are not None."""
    return {**kwargs, **{k: v for k, v in named.items() if v is not None}}


class EpochSampler(Sampler[int]):
    """Indices of one process's share of a dataset; shuffled per epoch from `seed + epoch`.

    The order depends only on (seed, epoch), so a resumed run sees the same batches again.
    """

    def __init__(self, dataset: Sized, shuffle: bool, seed: int = 0) -> None:
        self.n, self.shuffle, self.seed, self.epoch = len(dataset), shuffle, seed, 0

    def set_epoch(self, epoch: int) -> None:
        """Choose the permutation of this epoch (same name as DistributedSampler's)."""
        self.epoch = epoch

    def order(self) -> torch.Tensor:
        """This epoch's indices as a tensor (what the tensor fast path uses; no Python list of ints)."""
        if not self.shuffle:
            return torch.arange(self.n)
        return torch.randperm(self.n, generator=torch.Generator().manual_seed(self.seed + self.epoch))

    def __iter__(self) -> Iterator[int]:
        return iter(self.order().tolist())

    def __len__(self) -> int:
        return self.n


class Strategy:
    """Base strategy: one process, one device. Subclasses override what differs."""

    name = "base"

    def __init__(self, config: Config, device: torch.device) -> None:
        self.config = config
        self.device = device
        #: `warning` event fields (code, message, hint) for the loop to emit after `started`.
        self.warnings: list[dict[str, str]] = []

    # -- processes ------------------------------------------------------------------------------------
    @property
    def world_size(self) -> int:
        """Number of processes that train together."""
        return 1

    @property
    def global_rank(self) -> int:
        """This process's rank among all processes."""
        return 0

    @property
    def is_global_zero(self) -> bool:
        """Only this process writes events and checkpoints."""
        return self.global_rank == 0

    @property
    def is_local_zero(self) -> bool:
        """The first process on this node: on a node without global rank 0, it writes that node's run log
        its own `started` and final event (multi-node ddp), so no node's run looks lost."""
        return self.is_global_zero

    @property
    def devices(self) -> list[torch.device]:
        """Every device this run uses (reported in `started`, sampled for `mem`)."""
        return [self.device]

    @property
    def input_device(self) -> torch.device:
        """Where the model's inputs go (model_parallel: the first stage's device)."""
        return self.device

    def launch(self, fn: Callable[..., R], *args: Any, run_dir: RunDir | None = None, stop: Any = None,
               **kwargs: Any) -> R:
        """Run `fn(self, *args, **kwargs)` in every process of the run and return global rank 0's result.

        `run_dir` and `stop`, when given, reach `fn` as keywords of those names: `run_dir` is also where a
        multi-process strategy keeps its ranks' reports, and a spawned process gets its own `stop` flag
        (set by its SIGTERM handler, and set at once if this one already is).
        """
        self.setup_environment()
        try:
            return fn(self, *args, **given(kwargs, run_dir=run_dir, stop=stop))
        finally:
            self.teardown()

    def setup_environment(self) -> None:
        """Per-process setup before training (ddp: init_process_group)."""

    def teardown(self) -> None:
        """Per-process cleanup after training (ddp: destroy_process_group)."""

    def barrier(self) -> None:
        """Wait until every process gets here."""

    # -- model and data -------------------------------------------------------------------------------
    def setup_module(self, model: nn.Module) -> nn.Module:
        """Place (and wrap) the model for training; the optimizer is built from the result's parameters."""
        return model.to(self.device)

    def unwrap(self, model: nn.Module) -> nn.Module:
        """The plain module under any wrapper, for saving and evaluation by other strategies."""
        return model

    def batch_to_device(self, batch: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """Move (inputs, targets) where the model wants them; a no-op for tensors already there."""
        x, y = batch
        nb = self.device.type == "cuda"  # async copies only help (and only work well) from pinned memory
        return x.to(self.device, non_blocking=nb), y.to(self.device, non_blocking=nb)

    def sampler(self, dataset: Sized, shuffle: bool, seed: int = 0) -> Sampler[int]:
        """Which indices this process trains on; must have `set_epoch(epoch)`."""
        return EpochSampler(dataset, shuffle, seed)

    def local_batch_size(self, batch_size: int) -> int:
        """Per-process batch for the configured global `train.batch_size` (ddp divides by world size)."""
        return batch_size

    def local_num_workers(self, num_workers: int) -> int:
        """DataLoader workers for this process from `data.num_workers` (ddp splits them over its ranks)."""
        return num_workers

    # -- metrics --------------------------------------------------------------------------------------
    def all_reduce(self, tensor: torch.Tensor, op: str = "sum") -> torch.Tensor:
        """Combine a tensor over all processes (`op` is "sum", "mean" or "max")."""
        return tensor

    def failed_ranks(self, failed: bool) -> list[int]:
        """The ranks whose micro-batch failed; every rank calls it at the same point of every step."""
        return [self.global_rank] if failed else []

    def all_finite(self, finite: bool) -> bool:
        """Whether every rank's loss is finite."""
        return finite

    def gradient_buckets(self, params: list[nn.Parameter]) -> Any:
        """What averages `params`' gradients over ranks during a step's last backward, even when one rank
        fails (ddp: a `buckets.GradientBuckets`); None with one process."""
        return None

    def sync_buffers(self, module: nn.Module) -> None:
        """Give every rank global rank 0's buffers (BatchNorm statistics), as DDP's forward would."""

    def reduce_stop(self, stop: bool, force: bool = False) -> bool:
        """Whether to stop now, called after every step and (with `force`) at each epoch end.

        ddp must make all ranks agree or a collective hangs; it may meet only every few steps, but must
        meet when `force` is set (every rank calls it at the same step then)."""
        return stop

    # -- reporting ------------------------------------------------------------------------------------
    def report_memory(self, mem: Mem) -> Mem:
        """The `mem` field of rank 0's `step` events, from this process's figures (ddp adds the others)."""
        return mem

    def started_fields(self) -> dict[str, Any]:
        """Extra fields for the `started` event (backend, stage layout, ...)."""
        return {}
