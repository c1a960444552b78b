"""One optimizer step over a batch, in micro-batches, recovering from out-of-memory inside the run.

On an OOM in forward or backward the step's tensors are dropped, memory is collected, the micro-batch
is halved and the same batch is redone, accumulating gradients over `accumulate` micro-batches (each
loss weighted by its share of the batch), so the effective batch stays `train.batch_size`.

Under DDP with `train.oom = "recover"` gradients are not synchronised by DDP's backward hooks (an OOM on
one rank in the middle of backward would leave the others waiting in an all-reduce for ever, as in
mosaicml/composer #2117). Every micro-batch runs under `no_sync()`, then all ranks meet in one tiny
all_gather of "did you fail?"; only when no rank failed are the gradients all-reduced (one flat buffer).
Every rank therefore calls the same collectives in the same order, adopts the same micro-batch at the
same step, and none can hang.

Test hook: `TRAINCONSOLE_OOM_AT="RANK:STEP:PHASE"` (phase forward or backward) makes global rank RANK
raise the CPU allocator's out-of-memory error once, in that phase of its STEP-th optimizer step.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors
from torch.nn.parallel import DistributedDataParallel as DDP

from .guards import one_line
from .troubles.explain import pointed
from .troubles.forensics import MemoryHistory
from .troubles.oom import OutOfMemory, free, is_oom, memory_at

INJECTED = "DefaultCPUAllocator: can't allocate memory: injected by TRAINCONSOLE_OOM_AT"


@dataclass
class Failure:
    """An out-of-memory failure of one micro-batch (or, under DDP, of another rank)."""

    phase: str
    cause: str
    memory: dict[str, Any]
    ranks: list[int] = field(default_factory=list)
    forensics: dict[str, Any] = field(default_factory=dict)  # train.memory_history on a GPU


class Stepper:
    """Runs `step(x, y, step)`: zero grads, forward/backward per micro-batch, optimizer step."""

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer, precision: Any, strategy: Any,
                 config: dict[str, dict[str, Any]], emit: Callable[..., Any], num_classes: int = 0,
                 folder: Any = None) -> None:
        self.model, self.optimizer, self.precision, self.strategy = model, optimizer, precision, strategy
        self.batch = strategy.local_batch_size(config["train"]["batch_size"])
        self.micro_batch, self.recoveries = self.batch, 0
        self.recover = config["train"]["oom"] == "recover"
        self.cap_mb = config["train"]["max_memory_mb"]
        self.emit, self.num_classes = emit, num_classes
        self.config = config
        self.skip_nonfinite, self.skipped = config["train"]["nonfinite"] == "skip", 0
        self.ddp = isinstance(model, DDP) and dist.is_initialized()
        self.own_sync = self.ddp and self.recover
        self.group = getattr(getattr(strategy, "sync", None), "group", None)
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.inject = injected_fault(strategy.global_rank)
        self.history = MemoryHistory(config["train"]["memory_history"], strategy.device, folder, emit)

    @property
    def accumulate(self) -> int:
        """Micro-batches per optimizer step."""
        return math.ceil(self.batch / self.micro_batch)

    def resume_at(self, micro_batch: int | None) -> None:
        """Start at a checkpoint's micro-batch, so a resumed run does not run out of memory again."""
        if micro_batch:
            self.micro_batch = max(1, min(int(micro_batch), self.batch))

    def step(self, x: torch.Tensor, y: torch.Tensor, step: int) -> torch.Tensor | None:
        """One optimizer step over (x, y); returns the batch's mean loss, detached, on the device
        (None for a step skipped because its loss was not finite)."""
        try:
            while True:
                result = self._attempt(x, y, step)
                if not isinstance(result, Failure):
                    return result
                self._recover(result, step)
        except Exception as exc:
            plain = self.model.module if self.ddp else self.model  # a replay must call no collective
            better = pointed(exc, plain, x, y, self.num_classes, self.config)
            if better is None:
                raise
            raise better from exc

    def predict(self, x: torch.Tensor) -> torch.Tensor:
        """The model's output for evaluation, computed in micro-batches once training needed them."""
        if x.shape[0] <= self.micro_batch:
            return self.model(x)
        model = self.model.module if self.ddp else self.model  # no collectives: ranks' shards differ
        return torch.cat([model(part) for part in x.split(self.micro_batch)])

    def _attempt(self, x: torch.Tensor, y: torch.Tensor, step: int) -> torch.Tensor | Failure:
        self.optimizer.zero_grad(set_to_none=True)
        parts = list(zip(x.split(self.micro_batch), y.split(self.micro_batch), strict=True))
        total: torch.Tensor | None = None
        for i, (xs, ys) in enumerate(parts):
            weight = 1.0 if len(parts) == 1 else xs.shape[0] / x.shape[0]
            loss = self._micro(xs, ys, weight, step, last=i == len(parts) - 1)
            if self.own_sync:
                loss = self._agree(loss)
            if isinstance(loss, Failure):
                return loss
            total = loss if total is None else total + loss
        assert total is not None
        if self.skip_nonfinite and not self._finite(total):
            self._skip(step)
            return None
        if self.own_sync:
            self._all_reduce_grads()
        self._optimizer_step()
        return total

    def _finite(self, loss: torch.Tensor) -> bool:
        """Whether every rank's loss is finite (`train.nonfinite = "skip"`: one host sync per step)."""
        finite = bool(torch.isfinite(loss))
        if not self.ddp:
            return finite
        flag = torch.tensor([0.0 if finite else 1.0], dtype=torch.float64)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX, group=self.group)
        return flag.item() == 0

    def _skip(self, step: int) -> None:
        """Drop this step's gradients; warn at the 1st, 10th, 100th ... skipped step."""
        self.optimizer.zero_grad(set_to_none=True)
        self.skipped += 1
        if math.log10(self.skipped).is_integer():
            self.emit("warning", code="nonfinite_skipped", step=step + 1, skipped=self.skipped,
                      message=f"loss is NaN or infinite at step {step + 1}: step skipped "
                      f"({self.skipped} so far)",
                      hint="lower train.lr; with fp16 try bf16; check the data for NaN or infinite values")

    def _micro(self, x: torch.Tensor, y: torch.Tensor, weight: float, step: int,
               last: bool) -> torch.Tensor | Failure:
        """Forward and backward of one micro-batch; an OOM comes back as a Failure, not an exception."""
        phase = "forward"
        try:
            with self._no_sync(last):
                self._maybe_inject(step, phase)
                with self.precision.autocast():
                    loss = F.cross_entropy(self.model(x), y)
                if weight != 1.0:
                    loss = loss * weight
                phase = "backward"
                self._maybe_inject(step, phase)
                scaler = self.precision.scaler
                (scaler.scale(loss) if scaler is not None else loss).backward()
            return loss.detach()
        except Exception as exc:  # noqa: BLE001 - only out-of-memory is handled, the rest re-raised
            if not (self.recover and is_oom(exc, capped=self.cap_mb > 0)):
                raise
            return Failure(phase, one_line(exc, 200), memory_at(self.strategy.device),
                           forensics=self.history.at_oom(step + 1))  # while the step's tensors still live

    def _no_sync(self, last: bool) -> contextlib.AbstractContextManager[Any]:
        if self.own_sync or (self.ddp and not last):
            return self.model.no_sync()
        return contextlib.nullcontext()

    def _agree(self, result: torch.Tensor | Failure) -> torch.Tensor | Failure:
        """All ranks learn which of them failed this micro-batch (one tiny all_gather, on CPU)."""
        flag = torch.tensor([1.0 if isinstance(result, Failure) else 0.0], dtype=torch.float64)
        table = [torch.empty_like(flag) for _ in range(dist.get_world_size(self.group))]
        dist.all_gather(table, flag, group=self.group)
        failed = [rank for rank, row in enumerate(table) if row.item() > 0]
        if not failed:
            return result
        if not isinstance(result, Failure):  # this rank was fine; it drops its work like the others
            result = Failure("other rank", f"rank {failed[0]} ran out of memory",
                             memory_at(self.strategy.device))
        result.ranks = failed
        return result

    def _all_reduce_grads(self) -> None:
        """Average gradients over ranks in one flat all-reduce (what DDP's hooks would have done)."""
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in self.params]
        flat = _flatten_dense_tensors(grads)
        dist.all_reduce(flat)
        flat /= dist.get_world_size()
        for p, g in zip(self.params, _unflatten_dense_tensors(flat, grads), strict=True):
            p.grad = g

    def _optimizer_step(self) -> None:
        scaler = self.precision.scaler
        if scaler is None:
            self.optimizer.step()
            return
        scaler.step(self.optimizer)
        scaler.update()

    def _recover(self, failure: Failure, step: int) -> None:
        """Free memory, halve the micro-batch (or give up below 1), and say so."""
        self.optimizer.zero_grad(set_to_none=True)
        free(self.strategy.device)
        if self.micro_batch <= 1:
            error = OutOfMemory(f"out of memory at a micro-batch of 1 on {self.strategy.device} "
                                f"(step {step + 1}, {failure.phase}): {failure.cause}", hint=self._hint())
            error.event_fields = {"memory": failure.memory, **failure.forensics}
            raise error
        self.micro_batch //= 2
        self.recoveries += 1
        world = self.strategy.world_size
        self.emit("oom_recovered", micro_batch=self.micro_batch, accumulate=self.accumulate,
                  batch_size=self.batch * world, step=step + 1, device=str(self.strategy.device),
                  phase=failure.phase, cause=failure.cause, memory=failure.memory,
                  failed_ranks=failure.ranks, world_size=world, **failure.forensics)

    def _hint(self) -> str:
        cap = f"raise train.max_memory_mb (now {self.cap_mb}), " if self.cap_mb else ""
        return f"one sample does not fit: {cap}pick a smaller model or data.image_size, or precision bf16"

    def _maybe_inject(self, step: int, phase: str) -> None:
        if self.inject and self.inject == (step + 1, phase):
            self.inject = None
            raise RuntimeError(INJECTED)


def injected_fault(rank: int) -> tuple[int, str] | None:
    """(step, phase) of the test hook's out-of-memory error for `rank`, or None."""
    spec = os.environ.get("TRAINCONSOLE_OOM_AT", "").split(":")
    if len(spec) != 3 or spec[0] != str(rank):
        return None
    return int(spec[1]), spec[2]
