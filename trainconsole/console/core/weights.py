"""A run's weight histograms (its `histogram` events) and their drawing as sparkline rows. Pure.

Each row is one epoch of one layer: the counts re-binned onto an axis shared by every row shown, so a
distribution that widens or drifts over epochs is seen to do so; each row is scaled to its own peak.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

LEVELS = " ▁▂▃▄▅▆▇█"
KEEP = 256  # epochs kept per layer: the view shows the newest that fit its height


@dataclass(frozen=True)
class Snapshot:
    """One parameter tensor at the end of one epoch: its range and its counts in equal bins over it."""

    epoch: int
    low: float
    high: float
    counts: tuple[int, ...]


@dataclass
class Weights:
    """A run's histograms by layer (`conv1.weight`, `fc.bias`, ...), oldest epoch first."""

    layers: dict[str, list[Snapshot]] = field(default_factory=dict)

    def apply(self, event: dict[str, Any]) -> None:
        """Take one `histogram` event; a resumed run's replayed epochs replace the old ones."""
        epoch, layers = event.get("epoch"), event.get("layers")
        if not isinstance(epoch, int) or not isinstance(layers, dict):
            return
        for name, entry in layers.items():
            snap = _snapshot(epoch, entry)
            if snap is None:
                continue
            history = self.layers.setdefault(name, [])
            while history and history[-1].epoch >= epoch:
                history.pop()
            history.append(snap)
            del history[:-KEEP]

    @property
    def names(self) -> list[str]:
        """The layers, in the model's order."""
        return list(self.layers)


def _snapshot(epoch: int, entry: Any) -> Snapshot | None:
    if not isinstance(entry, dict):
        return None
    low, high, counts = entry.get("min"), entry.get("max"), entry.get("counts")
    if not (_finite(low) and _finite(high) and isinstance(counts, list) and counts):
        return None  # NaN/Inf weights have no bins: the run's log says why
    return Snapshot(epoch, float(low), float(high), tuple(int(c) for c in counts))


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


@dataclass(frozen=True)
class Rows:
    """What the weights pane draws: the shared axis and one sparkline per epoch (newest last)."""

    low: float
    high: float
    rows: list[tuple[int, str]]


def rows(history: list[Snapshot], width: int, height: int) -> Rows | None:
    """The newest `height` epochs of one layer as sparklines `width` characters wide (None if empty)."""
    shown = history[-max(1, height):]
    if not shown or width < 1:
        return None
    low, high = min(s.low for s in shown), max(s.high for s in shown)
    return Rows(low, high, [(s.epoch, sparkline(rebin(s, low, high, width))) for s in shown])


def rebin(snap: Snapshot, low: float, high: float, width: int) -> list[float]:
    """`snap`'s counts spread over `width` equal columns of [low, high], each bin in proportion to its
    overlap with each column."""
    columns = [0.0] * width
    span = (high - low) / width
    if span <= 0:
        columns[0] = float(sum(snap.counts))
        return columns
    if snap.high <= snap.low:  # every value equal (a bias at zero): one column
        columns[_column(snap.low, low, span, width)] += sum(snap.counts)
        return columns
    step = (snap.high - snap.low) / len(snap.counts)
    for i, count in enumerate(snap.counts):
        if not count:
            continue
        a = snap.low + i * step
        b = a + step
        for j in range(_column(a, low, span, width), _column(b, low, span, width) + 1):
            overlap = min(b, low + (j + 1) * span) - max(a, low + j * span)
            columns[j] += count * max(0.0, overlap) / step
    return columns


def _column(x: float, low: float, span: float, width: int) -> int:
    return min(width - 1, max(0, int((x - low) / span)))


def sparkline(values: list[float]) -> str:
    """Block characters scaled to the largest value; anything above zero shows at least ▁."""
    peak = max(values, default=0.0)
    if peak <= 0:
        return " " * len(values)
    top = len(LEVELS) - 1
    return "".join(LEVELS[0 if v <= 0 else max(1, round(v / peak * top))] for v in values)
