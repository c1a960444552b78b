"""The runs table's columns, each one's value for a run, and how a cell is cut to fit: what the first frame's
empty table needs, apart from the board (so it is drawn before the board's modules are loaded)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trainconsole.console.core.run_state import RunState

#: The runs table's columns: key and header.
COLUMNS = (
    ("run", "run"), ("status", "status"), ("strategy", "strategy"), ("epoch", "epoch"),
    ("loss", "loss"), ("acc", "acc"), ("rate", "smp/s"), ("elapsed", "elapsed"),
)
#: The column added after those when the home holds runs of more than one host.
HOST_COLUMN = ("host", "host")


def trials(run: RunState) -> int | None:
    """A search's trial count (None: not a search, or no trial yet): the run index's for an ended search
    whose log is not read."""
    if run.search is not None and run.search.trials:
        return len(run.search.trials)
    return None if run.trials_summary is None else run.trials_summary[0]


def epoch(run: RunState) -> int | None:
    """The epoch column's value: the run's epoch, a search's trial count (`3 tr`)."""
    count = trials(run)
    return run.epoch if count is None else count


def acc(run: RunState) -> float | None:
    """The acc column's value: the run's latest validation accuracy, a search's best trial's metric."""
    if run.search is not None and run.search.trials:
        leader = run.search.leader()
        return None if leader is None else leader.best
    return run.val_acc if run.trials_summary is None else run.trials_summary[1]


#: Each column's value for a run (None: it has none, and sorts last): what its cell shows, formatted by
#: `board.row`, and what a sort by the column orders by (`arrangement`), from this one definition.
VALUES: dict[str, Callable[[RunState, float], Any]] = {
    "run": lambda run, now: (run.name or run.id).lower(), "status": lambda run, now: run.status,
    "strategy": lambda run, now: run.strategy or None, "epoch": lambda run, now: epoch(run),
    "loss": lambda run, now: run.loss, "acc": lambda run, now: acc(run),
    "rate": lambda run, now: run.samples_per_s, "elapsed": lambda run, now: run.elapsed(now),
    "host": lambda run, now: run.host,
}
#: Between a run cell's label and its tags (the table draws the tags dimmed, after the name).
TAGS_SEP = "\t"


def middle(text: str, width: int) -> str:
    """Shorten from the middle, so both a run's name and the random end of its id stay readable."""
    width = max(width, 3)
    if len(text) <= width:
        return text
    head = (width - 1) - (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head):]


#: The most characters a number may take in a runs-table cell (its column widens to the widest shown); a
#: longer figure is shown shorter (fewer digits, `2k`), never cut.
FIGURE_WIDTHS = {"epoch": 9, "loss": 6, "acc": 6, "rate": 6, "elapsed": 7}
