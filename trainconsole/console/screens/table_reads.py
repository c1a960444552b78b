"""What the runs table shows beyond the board, read off the UI thread for the dashboard: each run's tags and
note (its meta.json, twice a second: a run tagged from the CLI or another console shows its tags within a
second) and an active filter's runs (the filter line's `ls --filter` language, the same parser and the same
run summaries as `ls`, through the control layer, asked again every second). What they find goes to the
table (`RunsTable.show_meta`, `RunsTable.show_matches`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trainconsole.console.filters import Filter, parse
from trainconsole.console.services.run_meta import MetaWatch, RunMeta

if TYPE_CHECKING:
    from textual.screen import Screen
    from textual.worker import Worker

    from trainconsole.console.core.board import Board
    from trainconsole.console.core.selection import Selection
    from trainconsole.console.screens.feeds import Feeds
    from trainconsole.console.widgets.runs_table import RunsTable
    from trainconsole.control import Control

META_S = 0.5  # tags and notes re-read (a stat per run) twice a second
FILTER_S = 1.0  # an active filter re-asked of the runs' summaries (new runs, changed statuses) every second


class TableReads:
    """The two reads, each one at a time, in thread workers of the screen; started on its mount."""

    table: RunsTable

    def __init__(self, screen: Screen[Any], control: Control, board: Board, selection: Selection,
                 feeds: Feeds) -> None:
        self.screen, self.control, self.board, self.selection = screen, control, board, selection
        self.feeds = feeds
        self.filter: Filter | None = None
        self._meta_worker: Worker[None] | None = None
        self._filter_worker: Worker[None] | None = None

    def start(self, table: RunsTable) -> None:
        """Begin re-reading tags and notes, and an active filter's runs, for this table."""
        self.table = table
        self._meta_watch = MetaWatch(self.control.home)
        self.screen.set_interval(META_S, self._look_meta)
        self.screen.set_interval(FILTER_S, self.refilter)

    # -- tags and notes --------------------------------------------------------------------------------

    def _look_meta(self) -> None:
        # once the runs are read (the first rows come first), and one look at a time (it owns its stamps)
        busy = self._meta_worker is not None and not self._meta_worker.is_finished
        if busy or not self.feeds.loaded:
            return
        ids = list(self.board.runs)  # a copy for the thread: the board stays the UI thread's
        first = (self.selection.selected,) if self.selection.selected else ()
        self._meta_worker = self.screen.run_worker(lambda: self._read_meta(ids, first), thread=True,
                                                   group="meta", exit_on_error=False)

    def _read_meta(self, ids: list[str], first: tuple[str, ...]) -> None:
        changed = self._meta_watch.look(ids, first)
        if changed:
            self.screen.app.call_from_thread(self._show_meta, changed)

    def _show_meta(self, changed: dict[str, RunMeta]) -> None:
        self.table.show_meta({i: m.tags for i, m in changed.items()}, {i: m.note for i, m in changed.items()})

    # -- the filter ------------------------------------------------------------------------------------

    def apply(self, text: str) -> None:
        """Show only the runs that match `text` (FilterError, the table unchanged, when it is no filter)."""
        self.filter = parse(text)
        self.table.filter_by(text)
        self.refilter()

    def clear(self) -> None:
        """Every run again."""
        self.filter = None
        self.table.clear_filter()

    def refilter(self) -> None:
        """Ask the runs' summaries which match the filter (a filter applied meanwhile: on the next tick)."""
        wanted = self.filter
        busy = self._filter_worker is not None and not self._filter_worker.is_finished
        if wanted is not None and not busy:
            self._filter_worker = self.screen.run_worker(lambda: self._match(wanted), thread=True,
                                                         group="filter", exit_on_error=False)

    def _match(self, wanted: Filter) -> None:
        shown = {s.id for s in self.control.summaries() if wanted.matches(s)}
        self.screen.app.call_from_thread(self._show_matches, wanted, shown)

    def _show_matches(self, wanted: Filter, shown: set[str]) -> None:
        if wanted is self.filter:
            self.table.show_matches(shown)
