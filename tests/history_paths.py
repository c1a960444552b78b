"""One run through both paths of a reattaching console: its whole log replayed, and its state kept as a
history after some of its events (`core/snapshot.py`) with the rest of the log applied on top. The property:
every view shows the same (its row, its plot at any width, the compare view's curves on both axes, its log
pane's notes, its weight histograms)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from trainconsole.console.core import snapshot
from trainconsole.console.core.board import row
from trainconsole.console.core.compare import curves
from trainconsole.console.core.plot import plot_lines, trial_lines
from trainconsole.console.core.run_state import RunState
from trainconsole.console.services.tracked_run import goes_back
from trainconsole.protocol import read_all
from trainconsole.protocol.rates import MeanRate

#: Plot widths (`buckets`) compared; with SMALL, a history keeps only what plots up to 8 columns read.
WIDTHS = (20, 57, 200, 2000)
SMALL = {"raw": 32, "widths": (1, 3, 8)}


def views(state: RunState, widths: tuple[int, ...] = WIDTHS) -> str:
    """Everything a view shows of the run, as text (NaN equals NaN)."""
    shown: list[Any] = [row(state, 2e9), state.best_val_acc, list(state.notes), state.weights.layers,
                        {k: vars(v) if isinstance(v, MeanRate) else v for k, v in vars(state).items()
                         if not hasattr(v, "decimate") and k != "metrics"}, list(state.metrics)]
    for width in widths:
        for metric in (None, *state.metrics):
            state.plotted = metric
            shown.append(plot_lines([state], width))
        state.plotted = None
        shown += [curves([state], axis, width) for axis in ("step", "wall")]
    shown += [len(s) for s in (state.train_loss, state.step_times, *state.metrics.values())]
    shown.append(list(state.val_losses.ys))
    if state.search is not None:
        shown += [trial_lines(state.search, width) for width in widths]
    return re.sub(r" at 0x[0-9a-f]+", "", repr(shown))  # (series: compared by what they draw, above)


def replayed(run_id: str, events: list[dict]) -> RunState:
    state = RunState(run_id)
    for event in events:
        state.apply(event)
    return state


def kept_then(run_id: str, events: list[dict], split: int) -> RunState | None:
    """The state kept after `split` events (through JSON, as the file keeps it), then the rest applied;
    None where it cannot be kept or the rest goes back before what it kept whole (the log is replayed)."""
    data = snapshot.encode(replayed(run_id, events[:split]))
    if data is None:
        return None
    data = json.loads(json.dumps(data))
    state, cut = snapshot.decode(run_id, data), snapshot.cut(data)
    rest = events[split:]
    if goes_back(rest, cut, state.step)[0]:  # (the reader's own check)
        return None
    for event in rest:
        state.apply(event)
    return state


def differences(events: list[dict], run_id: str = "r") -> list[str]:
    """The splits (none, half, all) at which a kept history shows the run otherwise than its replay, with
    the default sizes and with SMALL ones (so short logs, too, keep only part of their points)."""
    out = []
    whole = replayed(run_id, events)
    for small in (False, True):
        raw, widths = (SMALL["raw"], SMALL["widths"]) if small else (snapshot.RAW_MAX, WIDTHS)
        saved, snapshot.RAW_MAX = snapshot.RAW_MAX, raw
        try:
            expected = views(whole, widths)
            for split in sorted({0, len(events) // 2, len(events)}):
                state = kept_then(run_id, events, split)
                if state is not None and views(state, widths) != expected:
                    out.append(f"kept after {split} of {len(events)} events (raw {raw})")
        finally:
            snapshot.RAW_MAX = saved
    return out


def log_differences(events_path: Path) -> list[str]:
    """`differences` for one event log (up to 4 MiB: the suite's longest logs are its reader's own tests)."""
    try:
        if events_path.stat().st_size > 4 << 20:
            return []
    except OSError:
        return []
    events = read_all(events_path)
    return [f"{events_path}: {d}" for d in differences(events, events_path.parent.name)] if events else []
