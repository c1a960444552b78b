"""The one training loop, used by every strategy (the strategy owns only what differs).

Epochs are numbered from 1 in events and checkpoints. The step counter is the global optimizer step; a
resumed run continues it. Only global rank 0 writes events and checkpoints.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch
import torch.nn.functional as F

from trainconsole.protocol import Config

from .. import checkpoint
from ..strategies import Strategy, make_strategy
from ..troubles import disk, memory_cap, precision_probe
from ..troubles.divergence import DivergenceWatch
from ..troubles.leaks import LeakWatch
from . import batch_finder, cost, histograms, setup
from .meter import StepMeter
from .optim import LrSchedule
from .step import Stepper
from .tb_export import TensorBoardExport


class Emitter(Protocol):
    """Anything with `emit(kind, **fields)`: the run's EventWriter."""

    def emit(self, kind: str, **fields: Any) -> Any: ...


class Stop(Protocol):
    """Anything with `is_set()`: the SIGTERM flag."""

    def is_set(self) -> bool: ...


@dataclass
class Outcome:
    """How training ended: "finished" or "stopped", and the last metrics."""

    status: str
    metrics: dict[str, float] = field(default_factory=dict)


def run(config: Config, run_dir: Any, events: Emitter, stop: Stop, resume: str | None = None) -> Outcome:
    """Train as configured, through the strategy's launcher (one process, or one per device)."""
    config = batch_finder.resolve(config, resume)  # batch_size = "auto": measured once, for every rank
    strategy = make_strategy(config)
    return strategy.launch(train, config, run_dir=run_dir, events=events, stop=stop, resume=resume)


def train(strategy: Strategy, config: Config, run_dir: Any, events: Emitter, stop: Stop,
          resume: str | None = None) -> Outcome:
    """The per-process entry point: set up, optionally restore `resume`, and fit."""
    cost_meter = cost.CostMeter(events, run_dir)  # the run's time, memory and energy, into its final event
    training = Training(strategy, config, run_dir, cost_meter, stop)
    try:
        return training.fit(resume)
    finally:
        cost_meter.stop()
        if training.tensorboard is not None:
            training.tensorboard.close()


class Training:
    """One process's training state: the parts, the counters, the best accuracy; `fit()` runs it."""

    def __init__(self, strategy: Strategy, config: Config, run_dir: Any, events: Emitter, stop: Stop) -> None:
        self.strategy, self.config, self.run_dir = strategy, config, run_dir
        self.events, self.stop = events, stop
        self.is_zero = strategy.is_global_zero
        self.tensorboard: TensorBoardExport | None = None  # set once the model exists; setup may warn before
        self.parts = setup.build(strategy, config, lambda **f: self.emit("warning", **f))
        self.model, self.optimizer = self.parts.model, self.parts.optimizer
        self.epochs, self.step, self.start_epoch, self.batches_done = config["train"]["epochs"], 0, 1, 0
        self.max_steps = config["train"]["max_steps"] or math.inf
        total = min(self.epochs * len(self.parts.train_batches), self.max_steps)
        self.schedule = LrSchedule(config["train"]["lr_schedule"], config["train"]["lr"], int(total))
        self.step_meter = StepMeter(strategy.device, strategy.devices, strategy.world_size)
        self.best_acc, self.metrics = -1.0, {}
        self.stepper = Stepper(self.model, self.optimizer, self.parts.precision, strategy, config, self.emit,
                               self.parts.split.num_classes, getattr(run_dir, "path", None))
        self.leaks = LeakWatch(warmup_steps=min(max(20, len(self.parts.train_batches)), 200))  # epoch 1
        self.divergence = DivergenceWatch()
        spec = config["train"]
        folder = getattr(run_dir, "path", None)  # None in probes that train without a run directory
        self.tensorboard = TensorBoardExport(folder, strategy.unwrap(self.model),
                                       self.is_zero and spec["tensorboard"] and folder is not None,
                                       spec["histogram_every"])

    def emit(self, kind: str, **fields: Any) -> None:
        """Write an event, from global rank 0 only."""
        if self.is_zero:
            self.events.emit(kind, **fields)
            if self.tensorboard is not None:
                self.tensorboard.on_event(kind, fields)

    def emit_node(self, kind: str, **fields: Any) -> None:
        """Write `started` or a final event: from global rank 0, and from the first process of every
        other node into that node's own run log (multi-node ddp), so that no node's run looks lost."""
        if self.is_zero or self.strategy.is_local_zero:
            self.events.emit(kind, **fields)

    def fit(self, resume: str | None = None) -> Outcome:
        """Train the remaining epochs; stop early (with a checkpoint) when the stop flag is set."""
        resumed_from = self.restore(resume) if resume else None
        # after setup; every device this process uses (a DDP rank: its own)
        devices = self.strategy.devices if self.strategy.world_size == 1 else [self.strategy.device]
        cap = memory_cap.apply_devices(self.config["train"]["max_memory_mb"], devices)
        self.emit_node("started", **setup.started_fields(self.strategy, self.config, self.parts),
                       resumed_from_step=resumed_from, start_epoch=self.start_epoch, memory_cap=cap,
                       micro_batch=self.stepper.micro_batch,
                       batch_finder=self.config["train"].get("batch_finder"))
        for warning in self.strategy.warnings:  # e.g. dp on fewer than 2 GPUs, model_parallel on the CPU
            self.emit("warning", **warning)
        precision_probe.check(self.model, self.parts.split.train, self.strategy, self.parts.precision,
                              self.emit)  # a precision much slower than fp32 here: warn now
        epoch = self.start_epoch - 1
        for epoch in range(self.start_epoch, self.epochs + 1):
            self._train_steps(epoch)
            complete = self.batches_done >= len(self.parts.train_batches)
            self._emit_step(epoch)
            if self.strategy.reduce_stop(self.stop.is_set(), force=True) and not complete:
                return self._stopped(epoch)
            self._end_epoch(epoch, complete)
            if self.step >= self.max_steps:
                break
            if self.strategy.reduce_stop(self.stop.is_set(), force=True):
                return self._stopped(epoch, saved=True)
        self.emit_node("finished", best_val_acc=self.best_acc, val_acc=self.metrics.get("val_acc"),
                       val_loss=self.metrics.get("val_loss"), train_loss=self.metrics.get("train_loss"),
                       epochs=epoch, steps=self.step, skipped_steps=self.stepper.skipped)
        return Outcome("finished", dict(self.metrics))

    def _train_steps(self, epoch: int) -> None:
        """The hot path: no I/O and no host-device sync unless a `step` event is due."""
        model, opt, meter, schedule = self.model, self.optimizer, self.step_meter, self.schedule
        train_step = self.stepper.step  # forward/backward in micro-batches, OOM recovery, optimizer step
        to_device, reduce_stop, stop = self.strategy.batch_to_device, self.strategy.reduce_stop, self.stop
        if self.step >= self.max_steps:  # resumed past train.max_steps: nothing left to train
            return
        model.train()
        batches = self.parts.train_batches.epoch(epoch, self.batches_done)
        meter.restart()  # after the epoch's reordering: the first window measures training alone
        for x, y in batches:
            x, y = to_device((x, y))
            if schedule.active:
                schedule.apply(opt, self.step)
            loss = train_step(x, y, self.step)
            self.step += 1
            self.batches_done += 1
            if loss is not None:  # None: a step skipped for a NaN/Inf loss (train.nonfinite = "skip")
                meter.add(loss, x.shape[0])
            if self.is_zero and meter.due():
                self._emit_step(epoch)
            if reduce_stop(stop.is_set()) or self.step >= self.max_steps:
                return

    def _emit_step(self, epoch: int) -> None:
        fields = self.step_meter.flush(self.step)
        if fields is not None:
            self.metrics["train_loss"] = fields["loss"]
            fields["mem"] = self.strategy.report_memory(fields["mem"])
            self._watch(fields["mem"], fields["loss"])  # memory is read at step events only
            self.emit("step", step=self.step, epoch=epoch, lr=self.optimizer.param_groups[0]["lr"], **fields)

    def _watch(self, mem: dict[str, Any], loss: float | None = None) -> None:
        """Leak and divergence warnings (global rank 0, at step events and after evaluation)."""
        for warning in (self.leaks.observe(self.step, mem), self.divergence.observe(self.step, loss)):
            if warning:
                self.emit("warning", **warning)

    def _end_epoch(self, epoch: int, complete: bool) -> None:
        """Evaluate, report, and checkpoint (last.pt always, best.pt when val_acc improved)."""
        val_loss, val_acc = self.evaluate()
        if self.is_zero:  # evaluation's memory is watched too (outputs kept with their graphs)
            self._watch(self.strategy.report_memory(self.step_meter.memory()))
        is_best = val_acc > self.best_acc
        self.best_acc = max(self.best_acc, val_acc)
        self.metrics.update(val_loss=val_loss, val_acc=val_acc, best_val_acc=self.best_acc)
        self.emit("eval", epoch=epoch, step=self.step, val_loss=val_loss, val_acc=val_acc)
        if self.is_zero and epoch % self.config["train"]["histogram_every"] == 0:
            layers = histograms.compact(self.strategy.unwrap(self.model))
            self.emit("histogram", epoch=epoch, step=self.step, bins=histograms.BINS, layers=layers)
        self.save(self.run_dir.last_ckpt, epoch, complete)
        if is_best:
            self.save(self.run_dir.best_ckpt, epoch, complete, is_best=True)
        self.batches_done = 0
        if self.is_zero:  # one human-readable line per epoch for stdout.log
            print(f"epoch {epoch}/{self.epochs} step {self.step} loss {self.metrics.get('train_loss', 0):.4f}"
                  f" val_loss {val_loss:.4f} val_acc {val_acc:.4f}", flush=True)

    def _stopped(self, epoch: int, saved: bool = False) -> Outcome:
        if not saved:
            self.save(self.run_dir.last_ckpt, epoch, complete=False)
        self.emit_node("stopped", step=self.step, epoch=epoch, best_val_acc=self.best_acc)
        return Outcome("stopped", dict(self.metrics))

    @torch.no_grad()
    def evaluate(self) -> tuple[float, float]:
        """(val_loss, val_acc) over the validation set, combined across processes."""
        self.model.eval()
        self.stepper.sync_buffers()  # every rank evaluates with rank 0's BatchNorm statistics
        totals = None
        for x, y in self.parts.val_batches.epoch(0):
            x, y = self.strategy.batch_to_device((x, y))
            with self.parts.precision.autocast():
                out = self.stepper.predict(x).float()
            if totals is None:
                totals = torch.zeros(3, dtype=torch.float64, device=out.device)
            totals[0] += F.cross_entropy(out, y, reduction="sum")
            totals[1] += (out.argmax(1) == y).sum()
            totals[2] += y.numel()
        if totals is None:  # this rank's share of the validation set is empty (fewer samples than ranks)
            totals = torch.zeros(3, dtype=torch.float64, device=self.strategy.device)
        loss_sum, correct, n = self.strategy.all_reduce(totals, "sum").tolist()
        return loss_sum / max(n, 1), correct / max(n, 1)

    def save(self, path: os.PathLike[str], epoch: int, complete: bool, is_best: bool = False) -> None:
        """Write a checkpoint and its `checkpoint` event (rank 0 only), then wait for the other ranks."""
        if self.is_zero:
            model, scaler = self.strategy.unwrap(self.model), self.parts.precision.scaler
            needed = os.path.getsize(path) if os.path.exists(path) else None
            disk.wait_for_space(  # a full disk pauses the run (state kept in memory) instead of ending it
                lambda: checkpoint.save(path, model, self.optimizer, scaler, epoch, self.step, self.config,
                                        self.metrics, epoch_complete=complete,
                                        batches_done=0 if complete else self.batches_done,
                                        micro_batch=self.stepper.micro_batch,
                                        trained=self.step_meter.totals()),
                path, self.emit, self.config["train"]["disk_full_wait_s"], needed)
            self.emit("checkpoint", path=str(path), epoch=epoch, step=self.step, is_best=is_best)
        self.strategy.barrier()

    def restore(self, path: str) -> int:
        """Load model, optimizer and scaler state and the counters from a checkpoint; return its step."""
        state = checkpoint.load(path, map_location="cpu")
        self.strategy.unwrap(self.model).load_state_dict(state["model"])
        if state.get("optimizer"):
            self.optimizer.load_state_dict(state["optimizer"])
        scaler = self.parts.precision.scaler
        if state.get("scaler") and scaler is not None:
            scaler.load_state_dict(state["scaler"])
        self.step = int(state.get("step", 0))
        self.stepper.resume_at(state.get("micro_batch"))
        self.step_meter.resume_totals(state.get("trained"))
        epoch, complete = int(state.get("epoch", 0)), bool(state.get("epoch_complete", True))
        self.start_epoch = epoch + 1 if complete else max(epoch, 1)
        self.batches_done = 0 if complete else int(state.get("batches_done", 0))
        self.metrics = dict(state.get("metrics") or {})
        self.best_acc = self.metrics.get("best_val_acc", -1.0)
        return self.step
