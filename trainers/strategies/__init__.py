"""Strategies: what differs between single-device, DataParallel, DDP and model-parallel runs."""

from __future__ import annotations

import importlib

from ..guards import StrategyUnavailable
from .base import Config, EpochSampler, Strategy

#: strategy.name -> "module:Class" inside this package; imported only when chosen.
STRATEGIES = {
    "single": "single:SingleDevice",
    "dp": "dp:DataParallel",
    "ddp": "ddp:DistributedDataParallel",
    "model_parallel": "model_parallel:ModelParallel",
}


def make_strategy(config: Config) -> Strategy:
    """Build the strategy named by `strategy.name`."""
    name = config["strategy"]["name"]
    target = STRATEGIES.get(name)
    if target is None:
        raise StrategyUnavailable(f"strategy.name = {name!r} is not available in this build "
                                  f"(available: {', '.join(STRATEGIES)})")
    module, cls = target.split(":")
    return getattr(importlib.import_module(f".{module}", __name__), cls)(config)


__all__ = ["STRATEGIES", "EpochSampler", "Strategy", "make_strategy"]
