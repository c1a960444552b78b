"""The step meter: loss and throughput between `step` events, with no host-device sync per step.

The loss is summed detached on the device; `.item()` runs only when an event is written (at most
every `interval` seconds, and at each epoch end). Memory is read only then too.
"""

from __future__ import annotations

import math
import time
from typing import Any

import psutil
import torch

from trainconsole.protocol.shapes import Mem

from ..errors import NonFiniteLossError


class StepMeter:
    """Accumulates per-step loss and samples; `flush()` turns them into one `step` event's fields."""

    def __init__(self, device: torch.device, devices: list[torch.device], world_size: int = 1,
                 interval: float = 0.1) -> None:
        self.devices = [d for d in devices if d.type == "cuda"]
        self.world_size, self.interval = world_size, interval
        self.process = psutil.Process()
        self.loss_sum = torch.zeros((), device=device)
        self.count = self.samples = 0
        self.trained, self.train_s = 0, 0.0  # the run's samples and training seconds so far (all ranks)
        self.restart()

    def restart(self) -> None:
        """Start a new timing window (after eval or checkpointing, which are not training time)."""
        self.window_start = time.monotonic()
        self.due_at = self.window_start + self.interval

    def add(self, loss: torch.Tensor, batch: int) -> None:
        """Record one optimizer step (hot path: one in-place add on the device, no sync)."""
        self.loss_sum += loss.detach()
        self.count += 1
        self.samples += batch

    def due(self) -> bool:
        """Whether it is time for a `step` event."""
        return time.monotonic() >= self.due_at

    def flush(self, step: int) -> dict[str, Any] | None:
        """Fields of a `step` event for the steps since the last one (None if there were none)."""
        if self.count == 0:
            return None
        now = time.monotonic()
        loss = self.loss_sum.item() / self.count  # the only host-device sync of the hot path
        if not math.isfinite(loss):
            raise NonFiniteLossError(step, loss)
        seconds = max(now - self.window_start, 1e-9)  # training time only (restart() skips the rest)
        self.trained += self.samples * self.world_size
        self.train_s += seconds
        # samples_per_s: this window's rate (the plot's); samples / train_s: the run's mean (protocol.rates)
        rate = self.samples * self.world_size / seconds
        fields = {"loss": loss, "count": self.count, "samples_per_s": rate, "samples": self.trained,
                  "train_s": round(self.train_s, 6), "mem": self.memory()}
        self.loss_sum.zero_()
        self.count = self.samples = 0
        self.window_start, self.due_at = now, now + self.interval
        return fields

    def totals(self) -> dict[str, float]:
        """The run's samples and training seconds so far (kept in checkpoints: a resumed run goes on)."""
        return {"samples": self.trained, "train_s": self.train_s}

    def resume_totals(self, totals: dict[str, Any] | None) -> None:
        """Go on from a checkpoint's `totals()`."""
        totals = totals or {}
        self.trained, self.train_s = int(totals.get("samples", 0)), float(totals.get("train_s", 0.0))

    def memory(self) -> Mem:
        """Per-CUDA-device allocated/reserved/peak bytes and this process's resident set size."""
        devices = [{"device": str(d), "allocated": torch.cuda.memory_allocated(d),
                    "reserved": torch.cuda.memory_reserved(d), "peak": torch.cuda.max_memory_allocated(d)}
                   for d in self.devices]
        return {"devices": devices, "rss": self.process.memory_info().rss}
