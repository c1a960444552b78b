"""Divergence: a training loss that jumps far above its recent minimum, warned once.

NaN and infinity are caught elsewhere (the step meter); a loss that climbs from 0.8 to 16 in three steps
and stays finite used to end `finished` without a word. Fed the loss of each `step` event (a mean over
the steps since the last one, so read without any extra host-device sync).
"""

from __future__ import annotations

from collections import deque
from typing import Any

HINT = "lower train.lr, clip gradients (train.grad_clip_norm), or warm the learning rate up"


class DivergenceWatch:
    """`observe(step, loss)` returns a `warning`'s fields once, when the loss is `ratio` times its minimum
    over the last `window` step events and at least `margin` above it."""

    def __init__(self, window: int = 50, ratio: float = 4.0, margin: float = 1.0,
                 min_points: int = 3) -> None:
        self.recent: deque[float] = deque(maxlen=window)
        self.ratio, self.margin, self.min_points = ratio, margin, min_points
        self.warned = False

    def observe(self, step: int, loss: float | None) -> dict[str, Any] | None:
        """Add a step event's loss; the warning's fields the first time it diverges."""
        if loss is None or self.warned:
            return None
        low = min(self.recent, default=loss)
        enough = len(self.recent) >= self.min_points
        self.recent.append(loss)
        if not enough or loss < low * self.ratio or loss < low + self.margin:
            return None
        self.warned = True
        ratio = loss / low if low > 0 else float("inf")
        return {"code": "diverging", "step": step, "ratio": round(ratio, 1),
                "message": f"training loss {loss:.4g} at step {step} is {ratio:.0f}x its recent minimum "
                f"{low:.4g}: the run is diverging", "hint": HINT}
