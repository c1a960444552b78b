"""A run's training speed: its samples over its training seconds, from its `step` events (pure).

Each `step` event carries the rate of its own window (`samples_per_s`, what the plot draws) and, from the
config trainer, the run's samples and training seconds so far (`samples`, `train_s`: kept in checkpoints,
so a resumed run goes on). The run's figure — in `ls`, the runs table, compare and the leaderboard — is
their ratio: its mean, whatever its last moments were like, read from its last step event alone (`ls`
reads a log's tail). Events without them (a script's printed rate, older runs) count each step (`count`,
else 1) alike: the mean of their rates weighted by the time each step took.
"""

from __future__ import annotations

import math
from typing import Any


def _number(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


class MeanRate:
    """Folds `step` events into the run's mean samples/s (one per run, fed in order; `value` any time)."""

    def __init__(self) -> None:
        self.totals: float | None = None  # the last event's samples / train_s
        self.steps = self.step_time = 0.0  # without them: steps, and steps / rate, summed

    def add(self, event: dict[str, Any]) -> None:
        """Take one event (others than a `step` with a rate are ignored)."""
        samples, seconds = _number(event.get("samples")), _number(event.get("train_s"))
        if samples is not None and seconds is not None and seconds > 0:
            self.totals = samples / seconds
            return
        rate = _number(event.get("samples_per_s"))
        if rate is not None and rate > 0:  # each step took (its samples) / rate: the batch cancels out
            steps = _number(event.get("count")) or 1.0
            self.steps, self.step_time = self.steps + steps, self.step_time + steps / rate

    @property
    def value(self) -> float | None:
        """The mean samples/s so far (None before the first rate)."""
        if self.totals is not None:
            return self.totals
        return self.steps / self.step_time if self.step_time > 0 else None


def mean_rate(events: list[dict[str, Any]]) -> float | None:
    """The run's mean samples/s over its `step` events."""
    mean = MeanRate()
    for event in events:
        if event.get("type", "step") == "step":
            mean.add(event)
    return mean.value
