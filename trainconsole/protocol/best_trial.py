"""A search's best trial: the one rule the run index's `ls` row and the console's leaderboard both rank by
(stdlib only)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def is_metric(value: Any) -> bool:
    """A value a trial can be ranked by: a finite number (not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def better(value: float, best: float | None, mode: str) -> bool:
    """Whether a trial's `value` beats `best` (None: nothing yet) of a metric whose `mode` is max or min."""
    return best is None or (value > best if mode == "max" else value < best)


def best_of(bests: Mapping[str, float | None], mode: str, named: str | None = None) -> str | None:
    """The best trial's id: the one the search's `finished` event `named`, else the first of those with the
    best value in `bests`' order (None while no trial has a value)."""
    if named is not None and named in bests:
        return named
    found: str | None = None
    for trial_id, value in bests.items():
        if value is not None and better(value, None if found is None else bests[found], mode):
            found = trial_id
    return found
