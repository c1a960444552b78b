"""The runs pane: one row per run, updated cell by cell so that a slow link only carries what changed."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from rich.text import Text
from textual import events
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowDoesNotExist, RowKey
from textual.widgets.data_table import Row as DataRow

if TYPE_CHECKING:
    from rich.style import Style
    from textual._types import SegmentLines

from console.core.columns import COLUMNS, HOST_COLUMN, TAGS_SEP, middle

#: Fixed widths of every column but "run", which takes the rest of the width.
WIDTHS = {"status": 8, "strategy": 8, "epoch": 7, "loss": 6, "acc": 5, "rate": 6, "elapsed": 7}
#: The host column's width, shown only when the rows carry a host (the home holds more than one).
HOST_WIDTH = 12
STATUS_STYLES = {
    "running": "bold green", "finished": "cyan", "failed": "bold red", "stopped": "yellow",
    "killed": "magenta", "lost": "bold yellow",
}

Row = tuple[str, tuple[str, ...]]
#: Rendered cells kept (a screenful's, several times over); past it they are rendered afresh.
DRAWN_CELLS = 4000


class Cell:
    """A cell's text, styled when it is drawn: only a screenful of 10,000 rows is ever drawn."""

    __slots__ = ("table", "key", "value")

    def __init__(self, table: RunsTable, key: str, value: str) -> None:
        self.table, self.key, self.value = table, key, value

    def __rich__(self) -> Text:
        return self.table.styled(self.key, self.value)

    def __str__(self) -> str:
        return str(self.__rich__())


class RunsTable(DataTable[Cell]):
    """Every run with its status and latest metrics; the cursor row is the selected run."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes, cursor_type="row", zebra_stripes=False)
        self._cells: dict[str, tuple[str, ...]] = {}
        self._order: list[str] = []
        self._with_host = False
        self._drawn: dict[tuple[object, ...], SegmentLines] = {}  # rendered cells by text and place
        self._add_columns()

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
            if self.size.width:
                self._fit_run_column(self.size.width)
        self._fit_status(rows)
        order = [run_id for run_id, _ in rows]
        if order != self._order:
            self._rebuild(rows)
            return
        for run_id, cells in rows:
            old = self._cells.get(run_id)
            if old == cells:
                continue
            for i, (key, _) in enumerate(self._columns()):
                if old is None or old[i] != cells[i]:
                    self.update_cell(run_id, key, self._styled(key, cells[i]))
            self._cells[run_id] = cells

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
        if keep in self._cells:
            self.select(keep)

    def _add_rows(self, rows: list[Row]) -> None:
        """`add_row` for each row, but the cursor's watchers run once, not once a row (their messages cost
        seconds for 10,000 rows)."""
        keys = [column.key for column in self.ordered_columns]
        for run_id, cells in rows:
            row_key = RowKey(run_id)
            self._row_locations[row_key] = len(self.rows)
            self._data[row_key] = {k: self._styled(k.value, c) for k, c in zip(keys, cells, strict=True)}
            self.rows[row_key] = DataRow(row_key, 1)
            self._new_rows.add(row_key)
        self._require_update_dimensions = True
        self._update_count += 1
        self.check_idle()
        if rows:
            self.cursor_coordinate = self.cursor_coordinate  # as add_row does: a cell may have appeared
            if len(rows) == self.row_count and self.show_cursor and self.cursor_type != "none":
                self._highlight_cursor()  # the first rows: the cursor is on one now

    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        """Every column has a set width, so no cell is measured (Textual measures every cell of every new
        row for its auto-width columns: seconds for 10,000 rows)."""
        super()._update_dimensions(())

    def _fit_status(self, rows: list[Row]) -> None:
        """Widen the status column for a long status (`paused: disk full`), back when it is gone."""
        width = max([WIDTHS["status"], *(len(cells[1]) for _, cells in rows)])
        column = self.columns[ColumnKey("status")]
        if column.width != width:
            column.width = width
            self._require_update_dimensions = True
            if self.size.width:
                self._fit_run_column(self.size.width)

    def on_resize(self, event: events.Resize) -> None:
        """Give the run column whatever width the fixed columns leave."""
        self._fit_run_column(event.size.width)

    def _fit_run_column(self, total: int) -> None:
        # The pane's border and a vertical scrollbar take two columns each.
        status = self.columns[ColumnKey("status")].width - WIDTHS["status"]
        host = HOST_WIDTH if self._with_host else 0
        fixed = sum(WIDTHS.values()) + host + status + 2 * self.cell_padding * len(self._columns()) + 4
        column = self.columns[ColumnKey("run")]
        width = max(12, total - fixed)
        if column.width != width:
            column.width = width
            self._require_update_dimensions = True
            for run_id, cells in self._cells.items():
                self.update_cell(run_id, "run", self._styled("run", cells[0]))

    def _render_cell(self, row_index: int, column_index: int, base_style: Style, width: int,
                     cursor: bool = False, hover: bool = False) -> SegmentLines:
        """DataTable's render of a cell, kept while the cell's text and place are unchanged.

        DataTable keys its own cache on the whole table's update count, so the one changed cell of a live
        run rendered every visible cell again, through Rich, at every frame (most of a frame's time)."""
        column_key = self._column_locations.get_key(column_index)
        if row_index < 0 and column_key is not None:  # a header: its label (the sort column's arrow)
            label = self.columns[column_key].label
            text: tuple[object, ...] = (label.plain, str(label.style), tuple(label.spans))
        else:
            row_key = self._row_locations.get_key(row_index)
            cell = self._data.get(row_key, {}).get(column_key) if row_key is not None and column_key else None
            if not isinstance(cell, Cell):  # a cell of DataTable's own
                return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
            text = (cell.key, cell.value)
        key = (row_index, column_index, *text, base_style, width, cursor, hover, self._show_hover_cursor,
               self._pseudo_class_state)
        lines = self._drawn.get(key)
        if lines is None:
            if len(self._drawn) > DRAWN_CELLS:
                self._drawn.clear()
            lines = self._drawn[key] = super()._render_cell(row_index, column_index, base_style, width,
                                                            cursor, hover)
        return lines

    def _clear_caches(self) -> None:
        """DataTable's caches go (a style, cursor or layout change): the kept cells with them."""
        super()._clear_caches()
        if hasattr(self, "_drawn"):  # (DataTable's own __init__ may clear its caches before ours exist)
            self._drawn.clear()

    def _styled(self, key: str, value: str) -> Cell:
        return Cell(self, key, value)

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
