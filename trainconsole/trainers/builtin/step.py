"""One optimizer step over a batch, in micro-batches, recovering from out-of-memory inside the run.

On an OOM in forward or backward the step's tensors are dropped, memory is collected, BatchNorm
statistics are put back as they were before the step, the micro-batch is halved (from the largest
micro-batch the batch really had) and the same batch is redone in `accumulate` near-equal micro-batches
(each loss weighted by its share of the batch), so the effective batch stays `train.batch_size`.

Under DDP with `train.oom = "recover"` gradients are not synchronised by DDP's backward hooks (an OOM on
one rank in the middle of backward would leave the others waiting in an all-reduce for ever, as in
mosaicml/composer #2117), and buffers are not broadcast by DDP's forward (its "broadcast at the next
forward" flag is cleared only when a forward finishes, so after a mid-forward OOM on one rank the ranks'
broadcasts no longer pair). Instead, through the strategy: rank 0's buffers are broadcast at the start of
every attempt and before evaluation; every micro-batch runs under `no_sync()`, and the last one's backward
starts the gradient all-reduce bucket by bucket as gradients become ready (strategies/buckets.py: DDP's
overlap, kept); a rank that fails starts the buckets it did not reach with zeros, then all ranks learn
who failed and, only when none did, take the averaged gradients. Every rank calls the same collectives in
the same order, adopts the same micro-batch at the same step, and none can hang.

Test hook: `TRAINCONSOLE_OOM_AT="RANK:STEP:PHASE"` (phase forward or backward) makes global rank RANK
raise the CPU allocator's out-of-memory error once, in that phase of its STEP-th optimizer step, from
inside the model: a forward hook on a layer in its middle, or a gradient hook on that layer's output.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm
from torch.nn.parallel import DistributedDataParallel as DDP

from ..errors import NonFiniteLossError, TrainerError
from ..troubles.explain import hint_for, one_line
from ..troubles.forensics import MemoryHistory
from ..troubles.oom import OutOfMemory, free, is_oom, memory_at
from ..troubles.pointed import pointed

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
        self.clip = float(config["train"].get("grad_clip_norm") or 0.0)
        self.emit, self.num_classes = emit, num_classes
        self.config = config
        self.skip_nonfinite, self.skipped = config["train"]["nonfinite"] == "skip", 0
        self.ddp = isinstance(model, DDP)
        self.plain = model.module if self.ddp else model  # a replay or a split evaluation calls no collective
        self.own_sync = self.ddp and self.recover
        if self.own_sync:
            model.broadcast_buffers = False  # rank 0's buffers are broadcast by sync_buffers() instead
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.buckets = strategy.gradient_buckets(self.params) if self.own_sync else None
        self.statistics = [b for m in model.modules() if isinstance(m, _BatchNorm) for b in m.buffers()]
        self.fault = Fault.from_env(strategy.global_rank)
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
                self._recover(result, step, x.shape[0])
        except Exception as exc:
            if self.micro_batch < min(self.batch, x.shape[0]) and too_small(exc):
                raise MicroBatchTooSmall(self.micro_batch, self.recoveries) from exc
            better = pointed(exc, self.plain, x, y, self.num_classes, self.config)
            if better is None:
                raise
            raise better from exc

    def sync_buffers(self) -> None:
        """Before evaluation (every rank calls it): every rank evaluates with rank 0's statistics."""
        if self.own_sync:
            self.strategy.sync_buffers(self.plain)

    def predict(self, x: torch.Tensor) -> torch.Tensor:
        """The model's output for evaluation, computed in micro-batches once training needed them."""
        if x.shape[0] <= self.micro_batch:
            return self.model(x)
        return torch.cat([self.plain(part) for part in x.split(self.micro_batch)])

    def _attempt(self, x: torch.Tensor, y: torch.Tensor, step: int) -> torch.Tensor | Failure | None:
        self.optimizer.zero_grad(set_to_none=True)
        if self.buckets is not None:
            self.buckets.attach()  # gradients accumulate into the buckets
        if self.own_sync:
            self.strategy.sync_buffers(self.plain)
        saved = [b.clone() for b in self.statistics] if self.recover else []
        count = math.ceil(x.shape[0] / self.micro_batch)
        parts = list(zip(x.tensor_split(count), y.tensor_split(count), strict=True))  # near-equal sizes
        total: torch.Tensor | Failure | None = None
        with self.fault.armed(self.plain, step):
            for i, (xs, ys) in enumerate(parts):
                weight = 1.0 if len(parts) == 1 else xs.shape[0] / x.shape[0]
                if self.buckets is not None and i == len(parts) - 1:
                    self.buckets.arm()  # the last backward averages gradients as it goes
                loss = self._micro(xs, ys, weight, step, last=i == len(parts) - 1)
                if isinstance(loss, Failure):
                    total = loss
                    break
                total = loss if total is None else total + loss
        if self.buckets is not None:  # every rank, failed or not: the same collectives in the same order
            self.buckets.finish(failed=isinstance(total, Failure))
            total = self._agree(total)
        if isinstance(total, Failure):
            self._restore(saved)
            return total
        assert total is not None
        if self.buckets is not None:
            self.buckets.apply()
        if self.skip_nonfinite and not self.strategy.all_finite(bool(torch.isfinite(total))):
            self._skip(step)
            return None
        self._optimizer_step()
        return total

    def _restore(self, saved: list[torch.Tensor]) -> None:
        """BatchNorm statistics as they were before the failed attempt (its forward may have moved them)."""
        with torch.no_grad():
            for b, before in zip(self.statistics, saved, strict=True):
                b.copy_(before)

    def _skip(self, step: int) -> None:
        """Drop this step's gradients; warn at the 1st, 10th, 100th ... skipped step."""
        self.optimizer.zero_grad(set_to_none=True)
        self.skipped += 1
        if math.log10(self.skipped).is_integer():
            self.emit("warning", code="nonfinite_skipped", step=step + 1, skipped=self.skipped,
                      message=f"loss is NaN or infinite at step {step + 1}: step skipped "
                      f"({self.skipped} so far)",
                      hint=hint_for(NonFiniteLossError(step + 1, math.nan), self.config))

    def _micro(self, x: torch.Tensor, y: torch.Tensor, weight: float, step: int,
               last: bool) -> torch.Tensor | Failure:
        """Forward and backward of one micro-batch; an OOM comes back as a Failure, not an exception."""
        phase = "forward"
        try:
            with self._no_sync(last):
                with self.precision.autocast():
                    loss = F.cross_entropy(self.model(x), y)
                if weight != 1.0:
                    loss = loss * weight
                phase = "backward"
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
        """All ranks learn which of them failed this attempt; a rank that was fine drops its work too."""
        failed = self.strategy.failed_ranks(isinstance(result, Failure))
        if not failed:
            return result
        if not isinstance(result, Failure):
            result = Failure("other rank", f"rank {failed[0]} ran out of memory",
                             memory_at(self.strategy.device))
        result.ranks = failed
        return result

    def _optimizer_step(self) -> None:
        scaler = self.precision.scaler
        if self.clip > 0:  # after accumulation and averaging: the norm of the whole batch's gradient
            if scaler is not None:
                scaler.unscale_(self.optimizer)
            torch.nn.utils.clip_grad_norm_(self.params, self.clip)
        if scaler is None:
            self.optimizer.step()
            return
        scaler.step(self.optimizer)
        scaler.update()

    def _recover(self, failure: Failure, step: int, length: int) -> None:
        """Free memory, halve the largest micro-batch the batch had (or give up at 1), and say so."""
        self.optimizer.zero_grad(set_to_none=True)
        free(self.strategy.device)
        largest = math.ceil(length / math.ceil(length / self.micro_batch))
        if largest <= 1:
            error = OutOfMemory(f"out of memory at a micro-batch of 1 on {self.strategy.device} "
                                f"(step {step + 1}, {failure.phase}): {failure.cause}", hint=self._hint())
            error.event_fields = {"memory": failure.memory, **failure.forensics}
            raise error
        self.micro_batch = largest // 2
        self.recoveries += 1
        world = self.strategy.world_size
        self.emit("oom_recovered", micro_batch=self.micro_batch, accumulate=self.accumulate,
                  batch_size=self.batch * world, step=step + 1, device=str(self.strategy.device),
                  phase=failure.phase, cause=failure.cause, memory=failure.memory,
                  failed_ranks=failure.ranks, world_size=world, **failure.forensics)

    def _hint(self) -> str:
        cap = f"raise train.max_memory_mb (now {self.cap_mb}), " if self.cap_mb else ""
        return f"one sample does not fit: {cap}pick a smaller model or data.image_size, or precision bf16"


class MicroBatchTooSmall(TrainerError):
    """Out-of-memory recovery drove the micro-batch below what the model can train on."""

    def __init__(self, micro_batch: int, recoveries: int) -> None:
        super().__init__(f"the model cannot train on a micro-batch of {micro_batch} (BatchNorm needs more "
                         f"than one value per channel), where {recoveries} out-of-memory recoveries drove it")
        self.hint = ("too few samples fit in memory for BatchNorm: raise train.max_memory_mb, lower "
                     "data.image_size or pick a smaller model; or use a model with GroupNorm/LayerNorm")


def too_small(exc: BaseException) -> bool:
    """BatchNorm's refusal of a micro-batch with one value per channel."""
    return isinstance(exc, ValueError) and "Expected more than 1 value per channel" in str(exc)


class Fault:
    """The test hook's out-of-memory error, raised once from inside the model (where real ones strike)."""

    def __init__(self, step: int = 0, phase: str = "") -> None:
        self.step, self.phase = step, phase

    @classmethod
    def from_env(cls, rank: int) -> Fault:
        """`TRAINCONSOLE_OOM_AT="RANK:STEP:PHASE"` for this rank, or a fault that never fires."""
        spec = os.environ.get("TRAINCONSOLE_OOM_AT", "").split(":")
        if len(spec) != 3 or spec[0] != str(rank):
            return cls()
        return cls(int(spec[1]), spec[2])

    @contextlib.contextmanager
    def armed(self, model: nn.Module, step: int) -> Any:
        """At the fault's step: hooks on the model's later layers; the first of them to run fires."""
        if step + 1 != self.step:
            yield
            return
        handles = [layer.register_forward_hook(self._forward_hook) for layer in later_half(model)]
        try:
            yield
        finally:
            for handle in handles:
                handle.remove()

    def _forward_hook(self, module: nn.Module, inputs: Any, output: Any) -> None:
        if not self.step:
            return
        if self.phase == "forward":
            self._fire()
        elif isinstance(output, torch.Tensor) and output.requires_grad:
            output.register_hook(lambda grad: self._fire())

    def _fire(self) -> None:
        if self.step:
            self.step = 0
            raise RuntimeError(INJECTED)


def later_half(model: nn.Module) -> list[nn.Module]:
    """The second half of the model's layers that hold parameters, in registration order: the first of
    them that runs is in the middle of the forward (whatever wraps or splits the model)."""
    leaves = [m for m in model.modules() if not list(m.children()) and any(True for _ in m.parameters())]
    return leaves[len(leaves) // 2:] or [model]
