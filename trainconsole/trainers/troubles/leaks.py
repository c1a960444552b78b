"""Leak warnings: memory that grows steadily with every step after the warm-up, however slowly.

The caching allocator and the first epoch grow memory legitimately (detectron2 #163), so nothing is
judged before `warmup_steps` after this process's first observation. After that, every observation (each
`step` event, and each evaluation's end) adds to a whole-run series per memory figure: CUDA allocated per
device and rank on GPUs, the resident set size of each process on a CPU. A series keeps at most `keep`
points: when full, every other point goes (so it spans the whole run at a coarser grain). A series whose
least-squares line, fitted through everything since the warm-up, rises by at least `min_growth_mb`, at
`min_slope_mb` per step or more, with a good fit (R²), and still rises over its newer half, raises one
`warning` with code `memory_leak` and the slope in MB per step. Judging the whole run, not a window of a
few dozen events, is what catches a slow leak (0.5 MB a step at 0.1 s a step: docs/BENCHMARKS.md).
"""

from __future__ import annotations

from typing import Any

from trainconsole.protocol.shapes import Mem

MB = 1 << 20
HINT = ("a tensor is kept across steps: `total_loss += loss` instead of `loss.item()`, a list of outputs "
        "or losses that keeps their graphs, or evaluation without torch.no_grad(); .detach() what you keep")


class Series:
    """One memory figure over the whole run, decimated to at most `keep` points."""

    def __init__(self, keep: int) -> None:
        self.keep, self.points, self.stride, self.seen = keep, [], 1, 0

    def add(self, step: int, mb: float) -> None:
        """Add a point (kept when it falls on the current stride)."""
        if self.seen % self.stride == 0:
            self.points.append((step, mb))
            if len(self.points) > self.keep:
                self.points, self.stride = self.points[::2], self.stride * 2
        self.seen += 1


class LeakWatch:
    """Fed (step, mem) at step events; `observe` returns a warning's fields once, when memory leaks."""

    def __init__(self, warmup_steps: int, keep: int = 256, min_points: int = 8, min_growth_mb: float = 32.0,
                 min_slope_mb: float = 0.05, min_r2: float = 0.9) -> None:
        self.warmup, self.keep, self.min_points = warmup_steps, keep, min_points
        self.min_growth, self.min_slope, self.min_r2 = min_growth_mb, min_slope_mb, min_r2
        self.series: dict[str, Series] = {}
        self.warned, self.first_step = False, -1

    def observe(self, step: int, mem: Mem) -> dict[str, Any] | None:
        """Add this observation's memory; the `warning` fields the first time a figure grows like a leak."""
        if self.first_step < 0:
            self.first_step = step  # this process's first observation (a resumed run warms up again)
        if self.warned or step - self.first_step <= self.warmup:
            return None
        for source, used in figures(mem).items():
            series = self.series.setdefault(source, Series(self.keep))
            series.add(step, used / MB)
            found = self._judge(series.points)
            if found:
                self.warned = True
                slope, span = found
                return {"code": "memory_leak", "mb_per_step": round(slope, 3), "step": step, "source": source,
                        "message": f"{source} grows {slope:.2f} MB per step (+{slope * span:.0f} MB over "
                        f"{span} steps)", "hint": HINT}
        return None

    def _judge(self, points: list[tuple[int, float]]) -> tuple[float, int] | None:
        """(slope, span) when the series rises steadily enough to be a leak."""
        if len(points) < self.min_points:
            return None
        slope, r2 = fit(points)
        span = points[-1][0] - points[0][0]
        if slope < self.min_slope or slope * span < self.min_growth or r2 < self.min_r2:
            return None
        newer, _ = fit(points[len(points) // 2:])
        return (slope, span) if newer >= slope / 2 else None  # a rise that levelled off is a warm-up


def figures(mem: Mem) -> dict[str, float]:
    """Every figure to watch in a `mem` field: CUDA allocated per device (and rank), else each RSS."""
    devices = mem.get("devices") or []
    if devices:
        return {f"CUDA allocated on {d['device']}" + (f" (rank {d['rank']})" if "rank" in d else ""):
                float(d["allocated"]) for d in devices}
    ranks = [r for r in mem.get("ranks") or [] if "rss" in r]
    if ranks:
        return {f"RSS of rank {r['rank']}": float(r["rss"]) for r in ranks}
    return {"RSS": float(mem.get("rss", 0))}


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
