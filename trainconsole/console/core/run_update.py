"""What the reader thread hands the app about one run: a whole state to take over, new events, current facts.

Pure (no Textual, no I/O). The reader builds these and never touches them again once posted; the app
applies them to its `Board` (`Board.take`). Two updates of one run merge into one, so a slow UI gets fewer,
bigger ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trainconsole.console.core.run_state import Event, Note, RunState


@dataclass
class RunUpdate:
    """One run's news since its last update, in the order to apply it: `state`, then `events`, then facts."""

    run_id: str
    state: RunState | None = None  # a state built by the reader (first sight, a finished backfill, a restart)
    events: list[Event] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    info: dict[str, Any] | None = None  # run.json as last read (None until read)
    epochs: int | None = None  # the configured epochs
    alive: bool | None = None  # the run's process lives (None: not known yet)
    problem: str = ""  # why its files cannot be read, if they cannot
    gone: bool = False  # its directory was removed
    slurm_reason: str = ""  # why its Slurm job waits (`Resources`, `Priority`...), while it does

    def then(self, newer: RunUpdate) -> RunUpdate:
        """This update followed by a newer one, as one: a newer state already holds this one's events."""
        events = newer.events if newer.state is not None else self.events + newer.events
        return RunUpdate(self.run_id, newer.state or self.state, events, self.notes + newer.notes, newer.info,
                         newer.epochs, newer.alive, newer.problem, newer.gone, newer.slurm_reason)


def merge(pending: dict[str, RunUpdate], news: list[RunUpdate]) -> None:
    """Fold `news` into `pending` (keyed by run id), keeping each run's updates in order."""
    for update in news:
        old = pending.get(update.run_id)
        pending[update.run_id] = update if old is None else old.then(update)


def count_events(pending: dict[str, RunUpdate]) -> int:
    """How many events the pending updates carry (what back-pressure counts)."""
    return sum(len(u.events) for u in pending.values())
