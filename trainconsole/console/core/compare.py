"""Compare runs: the config keys whose values differ, what each run reached and what it cost, and their
curves overlaid in one colour per run. Pure (no Textual, no I/O): the compare screen and
`trainconsole compare` both build a `Comparison` here, from `RunState`s and their configs.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from trainconsole.console.core.board import duration, human_bytes
from trainconsole.console.core.history import Series
from trainconsole.console.core.plot import RUN_COLORS, PlotLine
from trainconsole.console.core.run_state import RunState, label

AXES = ("step", "wall time")
MISSING = "—"  # a key one run's config does not have


@dataclass(frozen=True)
class RunFacts:
    """What one run reached and what it cost (trainconsole/trainers/builtin/cost.py's figures, from its
    events)."""

    id: str
    label: str
    color: str
    status: str
    best_val_acc: float | None = None
    final_val_acc: float | None = None
    best_val_loss: float | None = None
    final_val_loss: float | None = None
    epochs: int | None = None
    wall_s: float | None = None
    samples_per_s: float | None = None
    host_peak: int | None = None  # bytes: the largest RSS sum over the run's processes
    gpu_peak: dict[str, int] = field(default_factory=dict)  # GPU index -> bytes, summed over the ranks
    gpu_hours: float | None = None
    energy_j: float | None = None


@dataclass(frozen=True)
class Comparison:
    """Runs side by side: their facts (in the order asked, which fixes their colours) and every config
    key's value per run."""

    runs: list[RunFacts]
    values: dict[str, list[Any]]  # "section.key" -> one value per run (MISSING where a run lacks it)

    @property
    def differs(self) -> list[str]:
        """The keys whose values are not all equal, in config order."""
        return [key for key, vals in self.values.items() if any(v != vals[0] for v in vals[1:])]

    def keys(self, all_keys: bool = False) -> list[str]:
        """The keys to show: those that differ, or every key."""
        return list(self.values) if all_keys else self.differs


def compare(runs: Sequence[RunState], configs: Sequence[Mapping[str, Any]], now: float) -> Comparison:
    """Compare `runs` (with their configs, in the same order)."""
    facts = [run_facts(run, RUN_COLORS[i % len(RUN_COLORS)], now) for i, run in enumerate(runs)]
    flat = [flatten(config) for config in configs]
    keys = list(dict.fromkeys(key for one in flat for key in one))
    return Comparison(facts, {key: [one.get(key, MISSING) for one in flat] for key in keys})


def run_facts(run: RunState, color: str, now: float) -> RunFacts:
    """One run's outcome and cost; its wall time from its own `cost` record, else from its events."""
    cost = run.cost or {}
    losses = list(run.val_losses.ys)
    wall = cost.get("wall_s")
    gpu_peak = cost.get("gpu_peak") or {}
    return RunFacts(
        run.id, label(run), color, run.status, run.best_val_acc, run.val_acc,
        min(losses) if losses else None, run.val_loss, run.epoch,
        float(wall) if _is_num(wall) else run.elapsed(now), run.samples_per_s,
        _host_peak(run), {str(k): int(v) for k, v in gpu_peak.items()},
        cost.get("gpu_hours"), cost.get("energy_j"))


def _host_peak(run: RunState) -> int | None:
    """The run's own record; without one (an older run), its last step's RSS summed over its ranks."""
    if run.cost and _is_num(run.cost.get("host_peak")):
        return int(run.cost["host_peak"])
    mem = run.mem or {}
    ranks = [r.get("rss") or 0 for r in mem.get("ranks") or [] if isinstance(r, dict)]
    return sum(ranks) if ranks else mem.get("rss")


def flatten(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """`{"train": {"lr": 0.1}}` -> `{"train.lr": 0.1}` (nested tables, e.g. a tune space, go deeper)."""
    flat: dict[str, Any] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


def to_json(comparison: Comparison, all_keys: bool = False) -> dict[str, Any]:
    """`trainconsole compare --json`: runs[] and differs{} (each key: every run's value by run id)."""
    ids = [f.id for f in comparison.runs]
    runs = [{
        "id": f.id, "status": f.status, "best_val_acc": f.best_val_acc, "final_val_acc": f.final_val_acc,
        "best_val_loss": f.best_val_loss, "final_val_loss": f.final_val_loss, "epochs": f.epochs,
        "wall_s": f.wall_s, "samples_per_s": f.samples_per_s,
        "mem": {"host": f.host_peak, "gpus": f.gpu_peak}, "gpu_hours": f.gpu_hours, "energy_j": f.energy_j,
    } for f in comparison.runs]
    differs = {key: dict(zip(ids, [_plain(v) for v in comparison.values[key]], strict=True))
               for key in comparison.keys(all_keys)}
    return {"runs": runs, "differs": differs}


def _plain(value: Any) -> Any:
    return None if value is MISSING else value


#: The facts rows of the compare table: (name, cell of one run). GPU rows only when a run has figures.
FACT_ROWS: tuple[tuple[str, Any], ...] = (
    ("status", lambda f: f.status),
    ("val acc best/final", lambda f: f"{_num(f.best_val_acc, '.4f')} / {_num(f.final_val_acc, '.4f')}"),
    ("val loss best/final", lambda f: f"{_num(f.best_val_loss, '.4g')} / {_num(f.final_val_loss, '.4g')}"),
    ("epochs", lambda f: _num(f.epochs, "d")),
    ("wall time", lambda f: "-" if f.wall_s is None else duration(f.wall_s)),
    ("samples/s", lambda f: _num(f.samples_per_s, ",.0f")),
    ("host peak", lambda f: "-" if f.host_peak is None else human_bytes(f.host_peak)),
)
GPU_ROWS: tuple[tuple[str, Any], ...] = (
    ("GPU peak", lambda f: " ".join(f"{i}:{human_bytes(n)}" for i, n in sorted(f.gpu_peak.items())) or "-"),
    ("GPU-hours", lambda f: _num(f.gpu_hours, ".3f")),
    ("energy", lambda f: "-" if f.energy_j is None else f"{f.energy_j / 1000:,.1f} kJ"),
)


def fact_rows(comparison: Comparison) -> list[tuple[str, list[str]]]:
    """The figures, a cell per run; the GPU rows only if some run was on a GPU."""
    runs = comparison.runs
    gpu = any(f.gpu_peak or f.gpu_hours is not None for f in runs)
    return [(name, [cell(f) for f in runs]) for name, cell in FACT_ROWS + (GPU_ROWS if gpu else ())]


def value_text(value: Any) -> str:
    """A config value as the table shows it."""
    if value is MISSING:
        return MISSING
    if isinstance(value, str):
        return value or '""'
    return str(value).lower() if isinstance(value, bool) else str(value)


def _num(value: Any, fmt: str) -> str:
    return format(value, fmt) if _is_num(value) else "-"


def _is_num(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def curves(runs: Sequence[RunState], axis: str, buckets: int) -> list[PlotLine]:
    """Each run's train loss and val accuracy on steps or on wall time (seconds since its first event),
    in run order (so the plot gives each run its colour)."""
    lines = []
    for run in runs:
        name = label(run)
        for kind, series in (("train", run.train_loss), ("val_acc", run.val_accs)):
            if len(series):
                xs, ys = series.decimate(buckets)
                if axis != AXES[0]:
                    xs = to_wall(xs, run.step_times)
                lines.append(PlotLine(run.id, name, kind, xs, ys))
    return lines


def to_wall(steps: list[float], times: Series) -> list[float]:
    """Steps -> seconds since the run's first event, interpolated between its `step` events' times."""
    xs, ts = times.xs, times.ys
    if not xs:
        return list(steps)
    out = []
    for step in steps:
        i = bisect_left(xs, step)
        if i <= 0 or i >= len(xs):
            out.append(ts[min(max(i, 0), len(xs) - 1)])
            continue
        x0, x1 = xs[i - 1], xs[i]
        out.append(ts[i - 1] + (ts[i] - ts[i - 1]) * (step - x0) / (x1 - x0))
    return out


#: `compare` as text: a row per figure (from a run's JSON entry), then a row per differing key.
TEXT_ROWS: tuple[tuple[str, Any], ...] = (
    ("status", lambda r: r["status"]),
    ("best val_acc", lambda r: _num(r["best_val_acc"], ".4f")),
    ("final val_acc", lambda r: _num(r["final_val_acc"], ".4f")),
    ("best val_loss", lambda r: _num(r["best_val_loss"], ".4g")),
    ("epochs", lambda r: _num(r["epochs"], "d")),
    ("wall", lambda r: "-" if r["wall_s"] is None else duration(r["wall_s"])),
    ("samples/s", lambda r: _num(r["samples_per_s"], ",.0f")),
    ("host peak", lambda r: "-" if r["mem"]["host"] is None else human_bytes(r["mem"]["host"])),
    ("GPU peak", lambda r: " ".join(f"{i}:{human_bytes(n)}" for i, n in r["mem"]["gpus"].items()) or "-"),
    ("GPU-hours", lambda r: _num(r["gpu_hours"], ".3f")),
    ("energy J", lambda r: _num(r["energy_j"], ",.0f")),
)


def text(report: dict[str, Any]) -> str:
    """`trainconsole compare` without --json: a row per figure and per differing key, a column per run."""
    runs = report["runs"]
    rows = [["", *(r["id"] for r in runs)]]
    rows += [[name, *(get(r) for r in runs)] for name, get in TEXT_ROWS]
    for key, values in report["differs"].items():
        cells = [MISSING if values[r["id"]] is None else values[r["id"]] for r in runs]
        rows.append([key, *map(value_text, cells)])
    if not report["differs"]:
        rows.append(["(the configs are the same)"] + [""] * len(runs))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows)
