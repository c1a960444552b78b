"""The runs table's own keys: `/` the filter line (the `ls --filter` language, the same parser and the same
run summaries as `ls`), `>` and `<` (or a click on a header) the sort column, `#` and `a` the cursor's
run's tags and note (through the control layer). Tags and notes are re-read from each run's meta.json
twice a second, so a run tagged from the CLI or another console shows its tags within a second.
A mixin of `MainScreen`.
"""

from __future__ import annotations

from textual.widgets import DataTable
from textual.worker import Worker

from trainconsole.console.core.table_view import TableView
from trainconsole.console.filters import Filter, FilterError, parse
from trainconsole.console.screens.dashboard_parts import Parts
from trainconsole.console.screens.path_screen import PathScreen
from trainconsole.console.services.run_meta import MetaWatch, RunMeta
from trainconsole.console.widgets.filter_line import FilterLine
from trainconsole.console.widgets.runs_table import RunsTable

META_S = 0.5  # tags and notes re-read (a stat per run) twice a second
#: The table's keys that the footer has no room for, on the runs pane's bottom border.
TABLE_KEYS = "/ filter · > sort · # tag · a note"
FILTER_S = 1.0  # an active filter re-asked of the runs' summaries (new runs, changed statuses) every second


class TableKeys(Parts):
    """The filter line, the sort column, tags and notes of the runs table."""

    table_view: TableView
    _filter: Filter | None = None
    _meta_worker: Worker[None] | None = None
    _filter_worker: Worker[None] | None = None

    def start_table_view(self) -> None:
        """Begin re-reading tags and notes, and an active filter's runs (on mount)."""
        self.table_view = TableView()
        self.query_one(RunsTable).border_subtitle = TABLE_KEYS
        self._meta_watch = MetaWatch(self.commands.control.home)
        self.set_interval(META_S, self._look_meta)
        self.set_interval(FILTER_S, self._refilter)

    # -- tags and notes --------------------------------------------------------------------------------

    def _look_meta(self) -> None:
        # once the runs are read (the first rows come first), and one look at a time (it owns its marks)
        busy = self._meta_worker is not None and not self._meta_worker.is_finished
        if busy or not getattr(self.app, "loaded", False):
            return
        ids = list(self.board.runs)  # a copy for the thread: the board stays the UI thread's
        first = (self.selection.selected,) if self.selection.selected else ()
        self._meta_worker = self.run_worker(lambda: self._read_meta(ids, first), thread=True, group="meta",
                                            exit_on_error=False)

    def _read_meta(self, ids: list[str], first: tuple[str, ...]) -> None:
        changed = self._meta_watch.look(ids, first)
        if changed:
            self.app.call_from_thread(self._show_meta, changed)

    def _show_meta(self, changed: dict[str, RunMeta]) -> None:
        view = self.table_view
        for run_id, meta in changed.items():
            view.tags[run_id], view.notes[run_id] = meta.tags, meta.note
        self.frames.redraw()

    def show_run_meta(self, run_id: str | None) -> None:
        """The selected run's tags and note, whole, in the runs pane's title (the run column has room for a
        few letters of them at 80x24), after the filter if one is on."""
        view = self.table_view
        tags = " ".join(f"#{t}" for t in view.tags.get(run_id or "", []))
        meta = " · ".join(part for part in (tags, view.notes.get(run_id or "", "")) if part)
        title = "runs (read-only)" if self.commands.control.read_only else "runs"
        title += f": {view.filter_text}" if view.filter_text else ""
        title += f" · selected: {meta}" if meta else ""
        table = self.query_one(RunsTable)
        if table.border_title != title:
            table.border_title = title

    def action_tag(self) -> None:
        """Set the cursor's run's tags (the run gets exactly the tags typed)."""
        run = self._selected_run()
        if run is None or self.refused("tag"):
            return
        old = self.table_view.tags.get(run.id, [])

        def answer(text: str | None) -> None:
            if text is not None:
                new = text.replace(",", " ").split()
                self.commands.tag(run, [t for t in new if t not in old], [t for t in old if t not in new])

        prompt = f"Tags of {run.id} (space-separated; the run gets exactly these):"
        self.app.push_screen(PathScreen(prompt, " ".join(old), empty_ok=True), answer)

    def action_note(self) -> None:
        """Write the cursor's run's note (empty removes it)."""
        run = self._selected_run()
        if run is None or self.refused("note"):
            return
        prompt = f"Note of {run.id} (empty removes it):"
        self.app.push_screen(PathScreen(prompt, self.table_view.notes.get(run.id, ""), empty_ok=True),
                             lambda text: text is not None and self.commands.note(run, text))

    # -- the filter line -------------------------------------------------------------------------------

    def action_filter(self) -> None:
        """Open the filter line (the `ls --filter` language)."""
        self.show_pane("runs")
        self.query_one(FilterLine).open()

    def on_filter_line_applied(self, event: FilterLine.Applied) -> None:
        """Enter: parse the filter (a bad one is said under it, the table unchanged), then ask the runs."""
        line = self.query_one(FilterLine)
        try:
            self._filter = parse(event.text)
        except FilterError as e:
            line.show_error(str(e))
            return
        line.show_error("")
        self.table_view.filter_text = event.text
        self.query_one(RunsTable).focus()
        self._refilter()

    def on_filter_line_cleared(self, event: FilterLine.Cleared) -> None:
        """Escape: every run again."""
        self._filter, self.table_view.shown, self.table_view.filter_text = None, None, ""
        self.query_one(RunsTable).focus()
        self.frames.redraw()

    def _refilter(self) -> None:
        wanted = self._filter
        busy = self._filter_worker is not None and not self._filter_worker.is_finished
        if wanted is not None and not busy:  # (a filter applied meanwhile is asked on the next tick)
            self._filter_worker = self.run_worker(lambda: self._match(wanted), thread=True, group="filter",
                                                  exit_on_error=False)

    def _match(self, wanted: Filter) -> None:
        shown = {s.id for s in self.commands.control.summaries() if wanted.matches(s)}
        self.app.call_from_thread(self._show_matches, wanted, shown)

    def _show_matches(self, wanted: Filter, shown: set[str]) -> None:
        if wanted is self._filter and shown != self.table_view.shown:
            self.table_view.shown = shown
            self.frames.redraw()

    # -- sorting ---------------------------------------------------------------------------------------

    def action_sort(self) -> None:
        """Sort the runs by the next column (after the last, the ranking `b` chooses)."""
        self.table_view.next_sort()
        self._sorted()

    def action_reverse(self) -> None:
        """Reverse the sort column's order."""
        self.table_view.reverse = not self.table_view.reverse
        self._sorted()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        """A click on a runs table header: sort by that column (again: the other way)."""
        if isinstance(event.data_table, RunsTable) and event.column_key.value:
            self.table_view.sort_by(event.column_key.value)
            self._sorted()

    def _sorted(self) -> None:
        self.notify(f"runs sorted by {self.table_view.describe()}", timeout=3)
        self.frames.redraw()
