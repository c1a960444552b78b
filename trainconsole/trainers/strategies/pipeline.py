"""A model cut into stages on consecutive devices, with micro-batches pipelined through them.

This is the GPipe-style schedule of the PyTorch model-parallel tutorial (`split_size`), generalised from
two stages to any number: at clock tick t, stage s works on micro-batch t - s. Ticks are issued from the
last stage to the first, so on GPUs (where kernels run asynchronously) every stage is busy at once.
Autograd records the same graph, so the backward pass runs through the stages in reverse by itself.
"""

from __future__ import annotations

import math

import torch
from torch import nn


class Pipeline(nn.Module):
    """Runs `stages[i]` on `devices[i]`; the original module stays registered as `.module`.

    Registering only the original module keeps `parameters()` in the original order (so optimizer state
    moves between strategies) and `train()`/`eval()` reaching every layer; the stage containers are kept
    in a plain list so they add no second set of parameter names.
    """

    def __init__(self, module: nn.Module, stages: list[nn.Sequential], devices: list[torch.device],
                 micro_batches: int) -> None:
        super().__init__()
        if len(stages) != len(devices):
            raise ValueError(f"{len(stages)} stages for {len(devices)} devices")
        self.module = module
        self.stages = [stage.to(device) for stage, device in zip(stages, devices, strict=True)]
        self.stage_devices = list(devices)
        self.micro_batches = micro_batches

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The model's output for batch `x` (on the first device), on the last stage's device."""
        chunks = list(x.split(math.ceil(len(x) / self.micro_batches))) if len(x) else [x]
        n_stages = len(self.stages)
        for tick in range(len(chunks) + n_stages - 1):
            for s in reversed(range(n_stages)):  # later stages first: their input was queued a tick ago
                m = tick - s
                if 0 <= m < len(chunks):
                    chunks[m] = self.stages[s](chunks[m].to(self.stage_devices[s], non_blocking=True))
        return torch.cat(chunks)

    def stage_sizes(self) -> list[int]:
        """Parameters per stage (for the `started`/`warning` events)."""
        return [sum(p.numel() for p in stage.parameters()) for stage in self.stages]
