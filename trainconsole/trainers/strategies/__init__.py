"""Strategies: what differs between single-device, DataParallel, DDP and model-parallel runs.

A strategy named N (one of the `strategy.name` choices in the config schema) lives in `N.py` here, as the
`Strategy` subclass whose `name` is N; it is imported only when chosen.
"""

from __future__ import annotations

import importlib

from trainconsole.protocol import SCHEMA

from ..errors import StrategyUnavailable
from .base import Config, EpochSampler, Strategy

#: The strategy names, as the config schema states them.
STRATEGIES: tuple[str, ...] = SCHEMA["strategy"]["name"].choices


def make_strategy(config: Config) -> Strategy:
    """Build the strategy named by `strategy.name` (ddp with `strategy.ray_address`: `ddp_ray.py`'s)."""
    name = config["strategy"]["name"]
    if name not in STRATEGIES:
        raise StrategyUnavailable(f"strategy.name = {name!r} is not available in this build "
                                  f"(available: {', '.join(STRATEGIES)})")
    on_ray = name == "ddp" and config["strategy"].get("ray_address")
    module = importlib.import_module(f".{'ddp_ray' if on_ray else name}", __name__)
    cls = next(c for c in vars(module).values() if isinstance(c, type) and issubclass(c, Strategy)
               and c.name == name and c.__module__ == module.__name__)
    return cls(config)


__all__ = ["STRATEGIES", "EpochSampler", "Strategy", "make_strategy"]
