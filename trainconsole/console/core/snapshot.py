"""A run's whole state as a small JSON-ready dict and back: what a reattaching console needs to show a long
run's row and plot without replaying its log (`services/run_history.py` keeps it beside the log). Pure.

Every field of `RunState` is kept as it is, except the long histories (`Series`): of those, only what the
plot can ever draw is kept. A series' `decimate(buckets)` reads the coarsest of its min/max summaries that
has at most 4 x `buckets` blocks; for any plot up to MAX_BUCKETS columns wide, the finer summaries of a long
series are never read. So a long series keeps the blocks of the finest summary that can be read (each
block's min and max point), the points the compare view's wall axis looks up (`compare.to_wall`: the two
step times around each point it can be asked for), and its last, partial block whole; the rest of its
points are not kept (given back, they sit between their block's min and max: `_fill`). Given back, the
series decimates to exactly the points the replayed one does, and takes new points as it would (`append`,
and a step replayed after the points not kept: `Series.truncate`). A new point at or before the last
point not kept (a resumed run replaying its steps: `cut`) would need the points not kept: the reader
replays the log instead.

A state this module cannot keep whole (a search's trials, a field it does not know) gives None: the log is
replayed, as for a run without a summary.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left
from collections import deque
from dataclasses import fields
from typing import Any

from trainconsole.console.core.history import FANOUT, LEVELS, Series
from trainconsole.console.core.run_state import Note, RunState
from trainconsole.console.core.weights import Snapshot, Weights
from trainconsole.protocol.rates import MeanRate

#: The widest plot (in columns, the plot's `buckets`) a kept series decimates exactly as its replay.
MAX_BUCKETS = 2000
#: A series of at most this many points is kept whole.
RAW_MAX = 4 * MAX_BUCKETS
#: The shape of what `encode` gives; another (an older or newer console's) is not read.
FORMAT = 1

_SERIES = ("train_loss", "val_losses", "val_accs", "step_times")
_WHOLE = ("val_losses", "val_accs")  # few points (one per evaluation); compare reads all of val_losses
_SKIP = ("id", "summarized", "trials_summary")  # the caller's; the run index's, never a replay's
_PLAIN = ("notes", "sources", "weights", "rate", "metrics", "search")  # kept by their own lines below


def encode(state: RunState) -> dict[str, Any] | None:
    """The state as JSON-ready values (None: it cannot be kept, replay its log)."""
    if state.search is not None or state.summarized:
        return None
    out: dict[str, Any] = {"format": FORMAT, "fields": _shapes()}
    plain = {}
    for f in fields(RunState):
        if f.name in _SERIES or f.name in _PLAIN or f.name in _SKIP:
            continue
        value = getattr(state, f.name)
        if not _json_ready(value):
            return None  # a field of a shape this module does not know: replay
        plain[f.name] = value
    queries = _queries(state)
    out["plain"] = plain
    out["series"] = {name: encode_series(getattr(state, name), queries if name == "step_times" else (),
                                         whole=name in _WHOLE) for name in _SERIES}
    out["metrics"] = {k: encode_series(s) for k, s in state.metrics.items()}
    out["notes"] = [[n.t, n.level, n.text, n.hint, n.detail] for n in state.notes]
    out["sources"] = sorted(state.sources)
    out["weights"] = {name: [[s.epoch, s.low, s.high, list(s.counts)] for s in snaps]
                      for name, snaps in state.weights.layers.items()}
    out["rate"] = [state.rate.totals, state.rate.steps, state.rate.step_time]
    return out


def decode(run_id: str, data: dict[str, Any]) -> RunState:
    """The state `encode` kept. Raises ValueError (or KeyError, TypeError) for anything else."""
    if data.get("format") != FORMAT or data.get("fields") != _shapes():
        raise ValueError("kept by another version")
    state = RunState(run_id)
    for name, value in data["plain"].items():
        if not hasattr(state, name) or name in _SERIES or name in _PLAIN or name in _SKIP:
            raise ValueError(f"unknown field {name}")
        setattr(state, name, value)
    for name in _SERIES:
        setattr(state, name, decode_series(data["series"][name]))
    state.metrics = {str(k): decode_series(v) for k, v in data["metrics"].items()}
    state.notes = deque((Note(*note) for note in data["notes"]), maxlen=state.notes.maxlen)
    state.sources = {str(s) for s in data["sources"]}
    state.weights = Weights({name: [Snapshot(e, lo, hi, tuple(counts)) for e, lo, hi, counts in snaps]
                             for name, snaps in data["weights"].items()})
    state.rate = MeanRate()
    state.rate.totals, state.rate.steps, state.rate.step_time = data["rate"]
    return state


def cut(data: dict[str, Any]) -> float:
    """The last step whose points were not all kept: a new step at or before it needs the whole log."""
    kept = [*data["series"].values(), *data["metrics"].values()]
    return max((float(s["cut"]) for s in kept if "cut" in s), default=-math.inf)


def encode_series(series: Series, queries: Any = (), whole: bool = False) -> dict[str, Any]:
    """A series as the plot (and the wall axis, for `queries`: the steps it may convert) can read it."""
    n = len(series)
    if whole or n <= RAW_MAX:
        return {"n": n, "xs": series.xs.tolist(), "ys": series.ys.tolist()}
    lows, highs = series._lo, series._hi  # noqa: SLF001 (the summaries this module keeps)
    level = next((i for i, lo in enumerate(lows) if len(lo) <= RAW_MAX), LEVELS - 1)
    block = FANOUT ** (level + 1)
    p0 = n // block * block  # the points from here on are kept whole (less than a block)
    lo, hi = lows[level][:p0 // block].tolist(), highs[level][:p0 // block].tolist()
    keep = {*lo, *hi}
    for j, (a, z) in enumerate(zip(lo, hi, strict=True)):
        if _fill(series.ys[a], series.ys[z]) is None:  # (no number between its min and max: all of it)
            keep.update(range(j * block, (j + 1) * block))
    if p0:
        keep.add(p0 - 1)  # the cut: the last point not kept whole
    xs = series.xs
    for q in queries:
        i = bisect_left(xs, q)
        keep.update(j for j in (i - 1, i) if 0 <= j < p0)
    points = sorted(keep)
    return {"n": n, "level": level, "p0": p0, "lo": lo, "hi": hi, "cut": xs[p0 - 1] if p0 else -math.inf,
            "pts": [[i, xs[i], series.ys[i]] for i in points],
            "xs": xs[p0:].tolist(), "ys": series.ys[p0:].tolist()}


def decode_series(data: dict[str, Any]) -> Series:
    """The series `encode_series` kept (its points not kept: the last kept x before them, and NaN)."""
    series = Series()
    if "pts" in data:
        _restore(series, data)
    for x, y in zip(data["xs"], data["ys"], strict=True):
        if not series.append(float(x), float(y)):
            raise ValueError("a point that was never kept")
    if len(series) != data["n"]:
        raise ValueError("points missing")
    return series


def _restore(series: Series, data: dict[str, Any]) -> None:
    """The first `p0` points as `encode_series` kept them: the summaries from its level up as they were
    after `p0` points, the finer ones placeholders (never read). (Each of its two arrays of up to
    500,000 points is made once and filled by runs: no array of that size made only to be replaced.)"""
    p0, level = int(data["p0"]), int(data["level"])
    block = FANOUT ** (level + 1)
    if p0 % block or not 0 <= level < LEVELS:
        raise ValueError("not a kept series")
    points = [(int(i), float(x), float(y)) for i, x, y in data["pts"]]
    kept = {i: y for i, _, y in points}
    xs = array("d", [-math.inf]) * p0
    for (i, x, _), nxt in zip(points, [*points[1:], (p0, 0.0, 0.0)], strict=True):
        if not (0 <= i < nxt[0] <= p0):
            raise ValueError("points out of order")
        xs[i:nxt[0]] = array("d", [x]) * (nxt[0] - i)  # (in order for bisect: the last kept x)
    lo, hi = array("q", data["lo"]), array("q", data["hi"])
    if len(lo) != len(hi) or len(lo) != p0 // block:
        raise ValueError("summaries of points not kept")
    if any(math.isnan(kept.get(i, math.nan)) for i in (*lo, *hi)):
        raise ValueError("summaries of points not kept")
    ys = array("d", [math.nan]) * p0  # each block's points not kept: see `_fill`
    for start, (a, z) in zip(range(0, p0, block), zip(lo, hi, strict=True), strict=True):
        fill = _fill(kept[a], kept[z])
        if fill is not None:
            ys[start:start + block] = array("d", [fill]) * block
    for i, _, y in points:
        ys[i] = y
    lows, highs = [], []
    for lv in range(LEVELS):
        size = FANOUT ** (lv + 1)
        if lv < level:
            lows.append(array("q", range(0, p0, size)))
            highs.append(array("q", lows[-1]))
            continue
        per = size // block  # blocks of `level` in one of this level (the first stored ones as they are)
        if per == 1:  # (its own: as stored)
            lows.append(array("q", lo))
            highs.append(array("q", hi))
            continue
        # (min/max return the first of equals: the earliest point, as `append` keeps it)
        lows.append(array("q", (min(lo[j:j + per], key=ys.__getitem__) for j in range(0, len(lo), per))))
        highs.append(array("q", (max(hi[j:j + per], key=ys.__getitem__) for j in range(0, len(hi), per))))
    series.xs, series.ys = xs, ys
    series._lo, series._hi = lows, highs  # noqa: SLF001


def _fill(low: float, high: float) -> float | None:
    """The y given to a block's points not kept: never its min nor its max, nor below or above them (its
    min where all its points are equal), so that a replayed step's `Series.truncate`, which finds a block's
    min and max again among its points, finds the kept ones. None: no number lies between (the block is
    kept whole)."""
    if low == high:
        return low
    mid = (low + high) / 2
    return mid if low < mid < high else None


def _queries(state: RunState) -> list[float]:
    """The steps the compare view's wall axis may convert: every point the plot may draw of the train
    loss and the val accuracy (`compare.curves`)."""
    out: list[float] = []
    for series in (state.train_loss, state.val_accs):
        kept = encode_series(series, whole=len(series) <= RAW_MAX)
        out += [p[1] for p in kept.get("pts", [])] + kept["xs"]
    return out


def _shapes() -> list[str]:
    """The fields of the shapes kept: a history of other shapes (another version's) is not read."""
    return [*sorted(f.name for f in fields(RunState)), *(f.name for f in fields(Note)),
            *(f.name for f in fields(Snapshot)), *sorted(vars(MeanRate()))]


def _json_ready(value: Any) -> bool:
    """Whether JSON gives the value back as it is (str keys; lists, not tuples)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, list):
        return all(_json_ready(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json_ready(v) for k, v in value.items())
    return False
