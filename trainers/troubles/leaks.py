"""Leak warnings: memory that grows steadily with every step after the warm-up.

The caching allocator and the first epoch grow memory legitimately (detectron2 #163), so nothing is
judged before `warmup_steps` after this process's first step event. After that, each `step` event's
memory figure (CUDA allocated on a GPU, the process's RSS on a CPU: read at step events only, never per
step) joins a sliding window; a least-squares line through it that rises by at least `min_growth_mb`
with a good fit (R²) raises one `warning` with code `memory_leak` and the slope in MB per step.
"""

from __future__ import annotations

from collections import deque
from typing import Any

MB = 1 << 20
HINT = ("a tensor is kept across steps: `total_loss += loss` instead of `loss.item()`, a list of outputs "
        "or losses that keeps their graphs, or evaluation without torch.no_grad(); .detach() what you keep")


class LeakWatch:
    """Fed (step, memory) at step events; `observe` returns a warning's fields once, when memory leaks."""

    def __init__(self, warmup_steps: int, window: int = 24, min_points: int = 8,
                 min_growth_mb: float = 32.0, min_r2: float = 0.9) -> None:
        self.warmup, self.min_points = warmup_steps, min_points
        self.min_growth, self.min_r2 = min_growth_mb, min_r2
        self.points: deque[tuple[int, float]] = deque(maxlen=window)
        self.warned, self.first_step = False, -1

    def observe(self, step: int, mem: dict[str, Any]) -> dict[str, Any] | None:
        """Add this step event's memory; the `warning` fields the first time the growth looks like a leak."""
        if self.first_step < 0:
            self.first_step = step  # this process's first step event (a resumed run warms up again)
        if self.warned or step - self.first_step <= self.warmup:
            return None
        devices = mem.get("devices") or []
        used, source = (devices[0]["allocated"], "CUDA allocated") if devices else (mem.get("rss", 0), "RSS")
        self.points.append((step, used / MB))
        slope, r2 = fit(list(self.points))
        span = self.points[-1][0] - self.points[0][0]
        if len(self.points) < self.min_points or slope * span < self.min_growth or r2 < self.min_r2:
            return None
        self.warned = True
        return {"code": "memory_leak", "mb_per_step": round(slope, 3), "step": step, "source": source,
                "message": f"{source} grows {slope:.2f} MB per step (+{slope * span:.0f} MB over the last "
                f"{span} steps)", "hint": HINT}


def fit(points: list[tuple[int, float]]) -> tuple[float, float]:
    """(slope, R²) of the least-squares line through (x, y) points; (0, 0) when undefined."""
    n = len(points)
    if n < 2:
        return 0.0, 0.0
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    syy = sum((y - my) ** 2 for _, y in points)
    sxy = sum((x - mx) * (y - my) for x, y in points)
    if sxx == 0 or syy == 0:
        return 0.0, 0.0
    return sxy / sxx, sxy * sxy / (sxx * syy)
