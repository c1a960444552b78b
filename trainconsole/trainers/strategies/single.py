"""Single-device strategy: everything in this process, on one CUDA device or the CPU."""

from __future__ import annotations

from typing import Any

import torch

from ..errors import StrategyUnavailable
from .base import Config, Strategy


def pick_device(accelerator: str, devices: Any) -> torch.device:
    """`cuda` when available and allowed (`auto`/`cuda`), else `cpu`; the first listed GPU if a list."""
    if accelerator == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        if accelerator == "cuda":
            raise StrategyUnavailable("strategy.accelerator = 'cuda' but no CUDA device is visible")
        return torch.device("cpu")
    index = devices[0] if isinstance(devices, list) and devices else 0
    if index >= torch.cuda.device_count():
        raise StrategyUnavailable(f"strategy.devices names GPU {index}, but only "
                                  f"{torch.cuda.device_count()} are visible")
    return torch.device("cuda", index)


class SingleDevice(Strategy):
    """One process, one device: the base behaviour, with the device chosen from the config."""

    name = "single"

    def __init__(self, config: Config) -> None:
        strategy = config["strategy"]
        device = pick_device(strategy["accelerator"], strategy["devices"])
        super().__init__(config, device)
        if device.type == "cuda":
            torch.cuda.set_device(device)
