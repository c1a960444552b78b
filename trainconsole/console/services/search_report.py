"""`trainconsole trials ID`: a search's trials ranked by its metric, with parameter importance."""

from __future__ import annotations

from typing import Any

from trainconsole import protocol
from trainconsole.protocol import RunDir

from ..core.leaderboard import Search, importance_bars, searched, status_text
from ..core.run_state import RunState


def search_of(run_id: str, events: list[protocol.Event]) -> Search | None:
    """The search as the console builds it from the run's events (None: not a tune run)."""
    state = RunState(run_id)
    for event in events:
        state.apply(event)
    return state.search


def report(run: RunDir, search: Search) -> dict[str, Any]:
    """The ranking and the importance, as `trials --json` prints them."""
    leader = search.leader()
    trials = [{"trial_id": t.id, "number": t.number, "status": t.status, "iteration": t.iteration,
               "best": t.best, "config": t.config, "metrics": t.metrics} for t in search.ranked()]
    return {"id": run.id, "metric": search.metric, "mode": search.mode,
            "best_trial": leader.id if leader else None, "trials": trials,
            "importance": [{"key": key, "score": score} for key, score in search.importance()]}


def text(search: Search) -> str:
    """The ranking as a table and the importance as bars, for a terminal."""
    leader = search.leader()
    lines = [f"{'':1} {'trial':>6} {'status':<8} {'iter':>4} {search.metric:>10}  searched"]
    for t in search.ranked():
        star = "*" if leader is not None and t.id == leader.id else ""
        best = "-" if t.best is None else f"{t.best:.4g}"
        name = f"#{t.number}" if t.number else t.id[-6:]
        row = f"{star:1} {name:>6} {status_text(t):<8} {t.iteration:>4} {best:>10}"
        lines.append(f"{row}  {searched(t.config)}")
        if t.cause:  # why it failed, under it (a failed search's trials are read for this)
            lines.append(f"{'':13}{t.status}: {t.cause}")
    bars = importance_bars(search)
    lines += ["", f"importance for {search.metric} (share of its variance over the ended trials):"]
    lines += [f"  {bar}" for bar in bars] or ["  (needs 3 ended trials with a result)"]
    return "\n".join(lines)
