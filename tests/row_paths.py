"""One run's row through both paths: its whole log folded as the console folds it live, and its run index
summary (`index.summarize`) as the console takes it for an ended run. The property: they are the same."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from history_paths import log_differences

from trainconsole.console.core.board import row
from trainconsole.console.core.run_state import RunState, summarized
from trainconsole.control import runs
from trainconsole.protocol import RunDir, index, read_all


def live(run: RunDir) -> RunState:
    """The run as the console's reader makes it from its whole log and its run.json."""
    state = RunState(run.id)
    for event in read_all(run.events):
        state.apply(event)
    info = run.read_info()
    state.set_info(info, run.epochs(info))
    state.alive = False
    return state


def both(path: Path, now: float | None = None) -> tuple[Any, Any] | None:
    """The run's row (its cells, then its best val acc: what `b` ranks by) through the index and through
    its log, or None where the index gives no row of its own (a run not ended: the console reads it)."""
    run = RunDir(path)
    summary = index.summarize(run, runs.status)
    state = summarized(run.id, summary.row, summary.facts)
    if state is None:
        return None
    now = time.time() if now is None else now
    logged = live(run)
    return row(state, now) + (repr(state.best_val_acc),), row(logged, now) + (repr(logged.best_val_acc),)


def differences(root: Path) -> list[str]:
    """A line for each run under `root` (any depth) whose two rows differ."""
    out = []
    for folder, _, names in os.walk(root):
        if "events.jsonl" not in names or "run.json" not in names:
            continue
        try:
            pair = both(Path(folder))
        except OSError:  # a run a test removed while it was read
            continue
        if pair is not None and pair[0] != pair[1]:
            out.append(f"{folder}: index {pair[0]} != log {pair[1]}")
        out += [f"history differs: {d}" for d in log_differences(Path(folder) / "events.jsonl")]
    return out
