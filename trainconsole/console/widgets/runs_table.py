"""The runs pane: one row per run, updated cell by cell so that a slow link only carries what changed.

It owns its keys and its arrangement of the rows (`Arrangement`: the filter's runs, the sort column, each
run's tags and note): `>` `<` and a click on a header sort it, `#` and `a` ask for a run's tags and note
(`AskLine`).
Its bindings are the dashboard's (they show in its footer and `?`), whose handlers call the methods here.
It posts what the dashboard acts on: `Rearranged` (the rows to show changed: draw a frame), `TagsTyped`
and `NoteTyped` (carried out through the control layer).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text
from textual import events
from textual.message import Message
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowDoesNotExist, RowKey

from trainconsole.console.core.arrangement import Arrangement
from trainconsole.console.core.columns import COLUMNS, HOST_COLUMN, TAGS_SEP, middle
from trainconsole.console.widgets.ask_line import AskLine
from trainconsole.console.widgets.cell_table import CellTable

if TYPE_CHECKING:  # (the first frame's empty table loads no board)
    from trainconsole.console.core.board import Row
    from trainconsole.console.core.run_state import RunState

#: The table's keys that the footer has no room for, on the runs pane's bottom border.
TABLE_KEYS = "/ filter · > sort · # tag · a note"
#: Fixed widths of every column but "run", which takes the rest of the width.
WIDTHS = {"status": 8, "strategy": 8, "epoch": 7, "loss": 6, "acc": 5, "rate": 6, "elapsed": 7}
#: The fixed columns' places among a row's cells.
FIXED = [(i, key) for i, (key, _) in enumerate(COLUMNS) if key in WIDTHS]
#: The host column's width, shown only when the rows carry a host (the home holds more than one).
HOST_WIDTH = 12
STATUS_STYLES = {
    "running": "bold green", "finished": "cyan", "failed": "bold red", "stopped": "yellow",
    "killed": "magenta", "lost": "bold yellow",
}


class RunsTable(CellTable):
    """Every run with its status and latest metrics; the cursor row is the selected run."""

    @dataclass
    class Rearranged(Message):
        """Which rows show, or their order or tags, changed: the dashboard draws a frame."""

    @dataclass
    class TagsTyped(Message):
        """`#` answered: the run's tags to add and to drop."""

        run_id: str
        add: list[str]
        drop: list[str]

    @dataclass
    class NoteTyped(Message):
        """`a` answered: the run's note (empty: none)."""

        run_id: str
        text: str

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._cells: dict[str, tuple[str, ...]] = {}
        self._order: list[str] = []
        self._with_host = False
        self.arrangement = Arrangement()
        self.read_only = False  # (said in the pane's title)
        self._width = 0  # the table's width at its last resize
        self._lengths: dict[str, Counter[int]] = {key: Counter() for _, key in FIXED}  # cell lengths shown
        self._add_columns()

    def on_mount(self) -> None:
        """Name the keys the footer has no room for."""
        self.border_subtitle = TABLE_KEYS

    def _columns(self) -> tuple[tuple[str, str], ...]:
        return (*COLUMNS, HOST_COLUMN) if self._with_host else COLUMNS

    def _add_columns(self) -> None:
        for key, header in self._columns():
            self.add_column(header, key=key, width=HOST_WIDTH if key == "host" else WIDTHS.get(key, 15))

    @property
    def selected_id(self) -> str | None:
        """The id of the run under the cursor, or None when there are no runs."""
        if not self._order or not 0 <= self.cursor_row < len(self._order):
            return None
        return self._order[self.cursor_row]

    def update_rows(self, rows: list[Row]) -> None:
        """Show these rows in this order; only cells that changed are redrawn. Rows with a cell more
        than `COLUMNS` bring the host column (the home holds runs of several hosts)."""
        with_host = bool(rows) and len(rows[0][1]) > len(COLUMNS)
        if with_host != self._with_host:
            keep = self.selected_id
            self._with_host = with_host
            self.clear(columns=True)
            self._add_columns()
            self._rebuild(rows, keep)
            self._refit()
        order = [run_id for run_id, _ in rows]
        if order != self._order:
            self._rebuild(rows)
        else:
            self._update_cells(rows)
        self._fit_widths()

    def _update_cells(self, rows: list[Row]) -> None:
        """Redraw the cells that changed (the rows' order is the same), counting their new lengths: each
        put in place as `update_cell` does, the table refreshed once (not once a cell: a frame of 20 live
        runs changed 20-40 cells)."""
        columns, changed = [ColumnKey(key) for key, _ in self._columns()], False
        for run_id, cells in rows:
            old = self._cells.get(run_id)
            if old == cells:
                continue
            data = self._data[RowKey(run_id)]
            for i, column in enumerate(columns):
                if old is None or old[i] != cells[i]:
                    data[column] = self._styled(column.value or "", cells[i])
                    changed = True
            self._recount(old, cells)
            self._cells[run_id] = cells
        if changed:
            self._update_count += 1
            self.refresh()

    def select(self, run_id: str) -> None:
        """Move the cursor to a run's row."""
        try:
            self.move_cursor(row=self.get_row_index(run_id))
        except RowDoesNotExist:
            pass

    def _rebuild(self, rows: list[Row], keep: str | None = None) -> None:
        keep = keep or self.selected_id
        self.clear()
        self._add_rows(rows)
        self._cells = dict(rows)
        self._order = [run_id for run_id, _ in rows]
        self._lengths = {key: Counter(len(cells[i]) for _, cells in rows) for i, key in FIXED}
        if keep in self._cells:
            self.select(keep)

    def show_rows(self, rows: list[Row], runs: dict[str, RunState], now: float, selected: str | None) -> None:
        """One frame's rows, as this table's arrangement shows them (filtered, sorted, tagged), and the
        selected run's tags and note in the title."""
        self.update_rows(self.arrangement.arrange(rows, runs, now))
        self.show_title(selected)

    def show_title(self, run_id: str | None) -> None:
        """The selected run's tags and note, whole, in the pane's title (the run column has room for a few
        letters of them at 80x24), after the filter if one is on."""
        arrangement = self.arrangement
        tags = " ".join(f"#{t}" for t in arrangement.tags.get(run_id or "", []))
        meta = " · ".join(part for part in (tags, arrangement.notes.get(run_id or "", "")) if part)
        title = "runs (read-only)" if self.read_only else "runs"
        title += f": {arrangement.filter_text}" if arrangement.filter_text else ""
        title += f" · selected: {meta}" if meta else ""
        if self.border_title != title:
            self.border_title = title

    # -- its keys: sort (> < b, a header clicked), tags and notes (# a) -------------------------------

    def sort_next(self) -> None:
        """`>`: sort by the next column (after the last, the ranking `b` chooses)."""
        self.arrangement.next_sort()
        self._sorted()

    def reverse_sort(self) -> None:
        """`<`: reverse the sort column's order."""
        self.arrangement.reverse = not self.arrangement.reverse
        self._sorted()

    def sort_by_ranking(self) -> None:
        """`b` chose a ranking: no longer sorted by a column."""
        self.arrangement.sort = None

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        """A click on a header: sort by that column (again: the other way)."""
        if event.data_table is self and event.column_key.value:
            self.arrangement.sort_by(event.column_key.value)
            self._sorted()

    def _sorted(self) -> None:
        self.notify(f"runs sorted by {self.arrangement.describe()}", timeout=3)
        self.post_message(self.Rearranged())

    def ask_tags(self, run_id: str) -> None:
        """`#`: ask for the run's tags (it gets exactly the tags typed), then post `TagsTyped`."""
        old = self.arrangement.tags.get(run_id, [])

        def answer(text: str | None) -> None:
            if text is not None:
                new = text.replace(",", " ").split()
                self.post_message(self.TagsTyped(run_id, [t for t in new if t not in old],
                                                 [t for t in old if t not in new]))

        prompt = f"Tags of {run_id} (space-separated; the run gets exactly these):"
        self.post_message(AskLine(prompt, " ".join(old), answer, empty_ok=True))

    def ask_note(self, run_id: str) -> None:
        """`a`: ask for the run's note (empty removes it), then post `NoteTyped`."""
        def answer(text: str | None) -> None:
            if text is not None:
                self.post_message(self.NoteTyped(run_id, text))

        prompt = f"Note of {run_id} (empty removes it):"
        self.post_message(AskLine(prompt, self.arrangement.notes.get(run_id, ""), answer, empty_ok=True))

    # -- what the dashboard's reads found: the filter's runs, tags and notes ---------------------------

    def filter_by(self, text: str) -> None:
        """A filter was applied (its runs come in `show_matches`): said in the title; the cursor back here."""
        self.arrangement.filter_text = text
        self.focus()

    def clear_filter(self) -> None:
        """Every run again."""
        arrangement = self.arrangement
        arrangement.shown, arrangement.filter_text = None, ""
        self.focus()
        self.post_message(self.Rearranged())

    def show_matches(self, shown: set[str]) -> None:
        """The runs the filter matches now."""
        if shown != self.arrangement.shown:
            self.arrangement.shown = shown
            self.post_message(self.Rearranged())

    def show_meta(self, tags: dict[str, list[str]], notes: dict[str, str]) -> None:
        """Runs' tags and notes that changed (re-read from their meta.json)."""
        self.arrangement.tags.update(tags)
        self.arrangement.notes.update(notes)
        self.post_message(self.Rearranged())

    # -- its columns' widths --------------------------------------------------------------------------

    def _recount(self, old: tuple[str, ...] | None, new: tuple[str, ...]) -> None:
        """A row's cells changed: its fixed cells' lengths in the counts (not every row's, every frame:
        10 ms a frame at 10,000 rows)."""
        for i, key in FIXED:
            counts = self._lengths[key]
            if old is not None:
                counts[len(old[i])] -= 1
            counts[len(new[i])] += 1

    def _fit_widths(self) -> None:
        """Widen a fixed column to its widest cell shown (a long status `paused: disk full`, an epoch
        `327/2000`), back when it is gone: a cell is never cut."""
        changed = False
        for key, counts in self._lengths.items():
            width = max([WIDTHS[key], *(n for n, seen in counts.items() if seen > 0)])
            column = self.columns[ColumnKey(key)]
            changed |= column.width != width
            column.width = width
        if changed:
            self._require_update_dimensions = True
            self._refit()

    def on_resize(self, event: events.Resize) -> None:
        """Give the run column whatever width the fixed columns leave."""
        self._width = event.size.width
        self._fit_run_column(event.size.width)

    def _refit(self) -> None:
        """The run column again, in the width the last resize gave (`size` leaves out the scrollbar, which
        `_fit_run_column` counts itself)."""
        if self._width:
            self._fit_run_column(self._width)

    def _fit_run_column(self, total: int) -> None:
        # The pane's border and a vertical scrollbar take two columns each.
        widths = sum(self.columns[ColumnKey(key)].width for key in WIDTHS)
        host = HOST_WIDTH if self._with_host else 0
        fixed = widths + host + 2 * self.cell_padding * len(self._columns()) + 4
        column = self.columns[ColumnKey("run")]
        width = max(12, total - fixed)
        if column.width != width:
            column.width = width
            self._require_update_dimensions = True
            for run_id, cells in self._cells.items():
                self.update_cell(run_id, "run", self._styled("run", cells[0]))

    def styled(self, key: str, value: str) -> Text:
        """A cell's value as drawn."""
        if key == "status":
            return Text(value, style="bold red" if "disk full" in value else STATUS_STYLES.get(value, ""))
        if key in ("loss", "acc", "rate", "elapsed", "epoch"):
            return Text(value, justify="right")
        if key == "run":
            return tagged(value, self.columns[ColumnKey("run")].width)
        return Text(value, no_wrap=True)


def tagged(value: str, width: int) -> Text:
    """A run cell: its label, then its tags dimmed (`label<TAGS_SEP>#a #b`); the label keeps at least
    two thirds of a narrow column, the tags are cut at their end."""
    label, _, tags = value.partition(TAGS_SEP)
    if not tags:
        return Text(middle(label, width), no_wrap=True)
    room = max(0, width - len(label) - 1)
    if room < min(len(tags), width // 3):  # too narrow for both: the tags get a third, the name the rest
        room = min(len(tags), width // 3)
        label = middle(label, width - room - 1)
    if len(tags) > room:
        tags = tags[: max(0, room - 1)] + "…" if room else ""
    text = Text(label, no_wrap=True)
    if tags:
        text.append(" " + tags, style="dim italic")
    return text
