"""How DDP ranks agree on stopping without a collective per step, and learn each other's memory use.

Every few steps (about every `TARGET_S` seconds of training, never every step) each rank contributes one
row — its stop flag, rank 0's proposal for the next interval, its device index and its memory figures —
to a single all_gather. All ranks then know the same things at the same step: whether anyone wants to
stop (so they all leave the loop at that step and no collective is left waiting), when to meet next, and
every rank's memory, which rank 0 puts into its `step` events. On GPUs this runs on a gloo group of CPU
tensors, so it never waits for the GPU stream.
"""

from __future__ import annotations

import time
from typing import Any

import psutil
import torch
import torch.distributed as dist

from trainconsole.protocol.shapes import Mem

TARGET_S = 0.25  # seconds between agreements: bounds the stop latency, costs ~4 tiny collectives/s
MAX_INTERVAL = 1000
COLUMNS = ("stop", "interval", "gpu", "rss", "allocated", "reserved", "peak")


class RankSync:
    """Counts this rank's steps and meets the other ranks every `interval` of them."""

    def __init__(self, device: torch.device, group: Any = None, first_interval: int = 2) -> None:
        self.device, self.group = device, group
        self.steps, self.next_at = 0, first_interval
        self.stopping = False
        self.rows: list[list[float]] = []
        self.process = psutil.Process()
        self.last_time, self.last_steps = time.monotonic(), 0

    def step(self, stop: bool) -> bool:
        """Called once per training step: True once the ranks have agreed to stop (then at every call)."""
        self.steps += 1
        if self.stopping or self.steps < self.next_at:
            return self.stopping
        return self.agree(stop)

    def agree(self, stop: bool) -> bool:
        """Meet now (every rank must call this at the same step): share rows, return the agreed stop."""
        if self.stopping:
            return True
        row = torch.tensor([float(stop), self._proposal(), *self._memory()], dtype=torch.float64)
        table = [torch.empty_like(row) for _ in range(dist.get_world_size(self.group))]
        dist.all_gather(table, row, group=self.group)
        self.rows = torch.stack(table).tolist()
        self.stopping = any(r[0] > 0 for r in self.rows)
        self.next_at = self.steps + int(self.rows[0][1])  # rank 0's proposal, the same on every rank
        return self.stopping

    def _proposal(self) -> float:
        """How many steps make about TARGET_S seconds, from this rank's pace since the last meeting."""
        now, done = time.monotonic(), self.steps - self.last_steps
        per_step = (now - self.last_time) / max(done, 1)
        self.last_time, self.last_steps = now, self.steps
        return float(min(MAX_INTERVAL, max(1, round(TARGET_S / max(per_step, 1e-6)))))

    def _memory(self) -> list[float]:
        """[gpu index or -1, host RSS, allocated, reserved, peak] of this rank (read at meetings only)."""
        rss = float(self.process.memory_info().rss)
        if self.device.type != "cuda":
            return [-1.0, rss, 0.0, 0.0, 0.0]
        d, cuda = self.device, torch.cuda
        return [float(d.index), rss, float(cuda.memory_allocated(d)), float(cuda.memory_reserved(d)),
                float(cuda.max_memory_allocated(d))]

    def memory(self, local: Mem, local_world: int) -> Mem:
        """`local` (this rank's `mem`) with every rank's figures from the last meeting added."""
        if not self.rows:
            return local
        ranks = []
        for rank, row in enumerate(self.rows):
            fields = dict(zip(COLUMNS[2:], row[2:], strict=True))
            gpu = int(fields.pop("gpu"))
            device = f"cuda:{gpu}" if gpu >= 0 else "cpu"
            entry = {"rank": rank, "node": rank // local_world, "device": device}
            figures = {k: int(v) for k, v in fields.items() if gpu >= 0 or k == "rss"}
            ranks.append({**entry, **figures})
        devices = [{k: r[k] for k in ("device", "rank", "node", "allocated", "reserved", "peak")}
                   for r in ranks if r["device"] != "cpu"]
        return {**local, "devices": devices, "ranks": ranks}
