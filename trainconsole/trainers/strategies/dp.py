"""DataParallel: one process replicates the model over the chosen GPUs and splits each batch between them.

With fewer than two GPUs there is nothing to split: the run trains as single-device and says so with a
`warning` event (DistributedDataParallel is the faster choice anyway). Shaped like Lightning Fabric's
`strategies/dp.py`: batches go to the first device, the wrapper scatters them.
"""

from __future__ import annotations

import torch
from torch import nn

from .base import Config, Strategy
from .devices import resolve

DP_FALLBACK = {
    "code": "dp_needs_two_gpus",
    "hint": "strategy.name = 'ddp' is faster than DataParallel, even on one machine with several GPUs",
}


class DataParallel(Strategy):
    """`nn.DataParallel` over `strategy.devices` GPUs; single-device when fewer than two are available."""

    name = "dp"

    def __init__(self, config: Config) -> None:
        found = resolve(config)
        gpus = [d for d in found if d.type == "cuda"]
        self.replicas = gpus if len(gpus) >= 2 else []
        device = gpus[0] if gpus else torch.device("cpu")
        super().__init__(config, device)
        if device.type == "cuda":
            torch.cuda.set_device(device)
        if not self.replicas:
            where = f"1 GPU ({device})" if gpus else "no GPU"
            self.warnings.append({**DP_FALLBACK, "message": f"DataParallel needs at least 2 GPUs and found "
                                  f"{where}: training as single-device"})

    @property
    def devices(self) -> list[torch.device]:
        """Every GPU the batch is split over (just the one device when falling back)."""
        return list(self.replicas) or [self.device]

    def setup_module(self, model: nn.Module) -> nn.Module:
        """Move to the first device and wrap in DataParallel (no wrapper on the fallback)."""
        model = model.to(self.device)
        if not self.replicas:
            return model
        return nn.DataParallel(model, device_ids=[d.index for d in self.replicas], output_device=self.device)

    def unwrap(self, model: nn.Module) -> nn.Module:
        """The module inside DataParallel."""
        return model.module if isinstance(model, nn.DataParallel) else model
