"""What the runs table shows of the board's rows: only the filter line's runs, in the chosen column's order,
each run's tags after its name. Pure (no Textual, no I/O): the dashboard applies it to each frame's rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from trainconsole.console.core.columns import COLUMNS, HOST_COLUMN, TAGS_SEP, VALUES

if TYPE_CHECKING:  # (the first frame's empty table holds an Arrangement: it loads no board)
    from trainconsole.console.core.board import Row
    from trainconsole.console.core.run_state import RunState

SORTABLE = tuple(key for key, _ in (*COLUMNS, HOST_COLUMN))
#: Columns whose natural order is largest first (a sort by them starts there).
LARGEST_FIRST = frozenset({"acc", "rate", "elapsed", "epoch"})


@dataclass
class Arrangement:
    """What the runs table shows of the rows: the filter's runs (None: every run), the sort column (None: the
    board's ranking, `b`), its direction, and each run's tags and note (from its meta.json)."""

    shown: set[str] | None = None
    filter_text: str = ""
    sort: str | None = None
    reverse: bool = False
    tags: dict[str, list[str]] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)

    def next_sort(self) -> str | None:
        """Sort by the next column (after the last: the board's ranking again); returns it."""
        order: list[str | None] = [*SORTABLE, None]
        self.sort = order[(order.index(self.sort) + 1) % len(order)]
        self.reverse = False
        return self.sort

    def sort_by(self, key: str) -> None:
        """Sort by a column (a header clicked); the same column again reverses the order."""
        self.reverse = not self.reverse if self.sort == key else False
        self.sort = key if key in SORTABLE else None

    def describe(self) -> str:
        """The order in words, for a toast."""
        if self.sort is None:
            return "the ranking (b: newest / best val acc)"
        first = "largest" if (self.sort in LARGEST_FIRST) != self.reverse else "smallest"
        return f"{dict((*COLUMNS, HOST_COLUMN))[self.sort]} ({first} first)"

    def arrange(self, rows: list[Row], runs: dict[str, RunState], now: float) -> list[Row]:
        """The rows to show: the filter's only, sorted by the chosen column, tags after each name."""
        out = [r for r in rows if self.shown is None or r[0] in self.shown]
        if self.sort is not None:
            key = sort_key(self.sort, now)
            known = [r for r in out if key(runs.get(r[0])) is not None]
            unknown = [r for r in out if key(runs.get(r[0])) is None]  # runs without the value: last
            descending = (self.sort in LARGEST_FIRST) != self.reverse
            known.sort(key=lambda r: key(runs.get(r[0])), reverse=descending)
            out = known + unknown
        return [(run_id, self._tagged(run_id, cells)) for run_id, cells in out]

    def _tagged(self, run_id: str, cells: tuple[str, ...]) -> tuple[str, ...]:
        tags = self.tags.get(run_id)
        if not tags:
            return cells
        return (f"{cells[0]}{TAGS_SEP}{' '.join('#' + t for t in tags)}", *cells[1:])


def sort_key(column: str, now: float) -> Callable[[RunState | None], Any]:
    """What a column sorts by for a run: the value its cell shows (`columns.VALUES`; None: the run has no
    value there, it goes last)."""
    of = VALUES[column]
    return lambda run: None if run is None else of(run, now)
