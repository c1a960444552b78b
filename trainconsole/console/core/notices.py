"""The console's notices: a run ended (finished, failed, stopped, killed, lost) or warns of a trouble (out of
memory recovered, a memory leak, a diverging loss, a full disk), seen live. Pure: the app hands it each run's
state before and after an update, and the events the reader read live (never a replayed history: a run's
first read and its backfilled history come as a whole state, not as events).
"""

from __future__ import annotations

from dataclasses import dataclass

from trainconsole.console.core.run_state import Event, RunState, label
from trainconsole.console.core.run_update import RunUpdate

#: The warnings worth a notice (the others stay in the run's log pane).
TROUBLES = {"memory_leak": "a memory leak", "diverging": "a diverging loss", "disk_full": "the disk is full",
            "trials_stuck": "trials wait with nothing running"}


@dataclass(frozen=True)
class Notice:
    """One toast: its text and severity (information, warning, error)."""

    text: str
    severity: str


@dataclass(frozen=True)
class Before:
    """What a run was before an update: whether it was seen running with its process alive."""

    running: bool

    @classmethod
    def of(cls, run: RunState | None) -> Before:
        """The run's facts now (None: not seen yet)."""
        return cls(run is not None and run.alive is True and run.status == "running")


def notices(update: RunUpdate, before: Before, after: RunState | None) -> list[Notice]:
    """The notices one applied update gives: its live events', and `lost` when a run seen alive is gone."""
    if after is None or not (update.events or before.running):  # (most updates: cheap at 10,000 runs)
        return []
    name = label(after)
    found = (_of_event(name, e) for e in update.events if e.get("type") in _NOTICED)
    out = [n for n in found if n is not None]
    if before.running and after.status == "lost":
        out.append(Notice(f"{name}: lost (its process is gone without a final event)", "error"))
    return out


#: The kinds of event `_of_event` may make a notice of (a live read's hundreds of steps are passed over).
_NOTICED = frozenset({"finished", "failed", "stopped", "killed", "oom_recovered", "warning"})


def _of_event(name: str, e: Event) -> Notice | None:
    kind = e.get("type")
    if kind == "finished":
        best = e.get("best_val_acc")
        text = f"{name}: finished" + (f", best val acc {best:.4f}" if _num(best) else "")
        return Notice(text, "information")
    if kind == "failed":
        return Notice(f"{name}: failed: {e.get('cause') or 'unknown cause'}", "error")
    if kind in ("stopped", "killed"):
        return Notice(f"{name}: {kind}", "warning" if kind == "killed" else "information")
    if kind == "oom_recovered":
        return Notice(f"{name}: out of memory, recovered (a smaller micro-batch)", "warning")
    if kind == "warning" and e.get("code") in TROUBLES:
        return Notice(f"{name}: {TROUBLES[str(e['code'])]}: {e.get('message', '')}".rstrip(": "), "warning")
    return None


def _num(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
