"""A `DataTable` that keeps what it drew: each cell by its text and place, each body line by its cells, and a
plain cell's new text (a live loss) drawn from the styles Rich gave a one-character template at that place
(`Shape`), not through Rich. The runs table is one; `tests/console/test_table_cells.py` holds every line to
DataTable's own drawing. It uses Textual's private `_segment_tools` and DataTable's internals (pyproject holds
Textual to the 8.2 line it was written against)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual._segment_tools import line_crop
from textual.renderables.styled import Styled
from textual.strip import Strip
from textual.widgets import DataTable
from textual.widgets.data_table import Row as DataRow
from textual.widgets.data_table import RowKey

from trainconsole.console.widgets.cell_shape import Shape

if TYPE_CHECKING:
    from textual._types import SegmentLines
    from textual.geometry import Region

    from trainconsole.console.core.board import Row

#: Rendered cells kept, and cell shapes (see `Shape`): a screenful's, several times over; past it they are
#: made afresh.
DRAWN_CELLS = 4000
#: Drawn lines kept, past which they are drawn afresh.
DRAWN_LINES = 400


class Cell:
    """A cell's text, styled when it is drawn: only a screenful of 10,000 rows is ever drawn."""

    __slots__ = ("table", "key", "value")

    def __init__(self, table: CellTable, key: str, value: str) -> None:
        self.table, self.key, self.value = table, key, value

    def __rich__(self) -> Text:
        return self.table.styled(self.key, self.value)

    def __str__(self) -> str:
        return str(self.__rich__())


class CellTable(DataTable[Cell]):
    """A row-cursor table of `Cell`s that draws its body lines itself; a subclass says how a cell is
    styled (`styled`)."""

    #: Draw rows and plain cells without DataTable's and Rich's per-cell work (False: as DataTable draws,
    #: which the tests compare against).
    FAST = True

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes, cursor_type="row", zebra_stripes=False)
        self._drawn: dict[tuple[object, ...], SegmentLines] = {}  # rendered cells by text and place
        self._lines: dict[tuple[object, ...], Strip] = {}  # drawn rows by their cells and place
        self._shapes: dict[tuple[object, ...], Shape | None] = {}  # how a plain cell is drawn, by place
        self._pass: tuple[Any, ...] | None = None  # what a render pass's lines share (`_facts`)

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


    def render_lines(self, crop: Region) -> list[Strip]:
        self._pseudo_class_state = self.get_pseudo_class_state()
        self._pass = self._facts()  # what every line of this pass shares (reactives are slow to read)
        try:
            return super().render_lines(crop)
        finally:
            self._pass = None

    def _facts(self) -> tuple[Any, ...]:
        """What every line drawn now shares: whether it is `_plain`, the line style, the widths, where the
        cursor and the hover are and whether they show, the pseudo-classes."""
        widths = tuple(column.get_render_width(self) for column in self.ordered_columns)
        return (self._plain(), self.rich_style, self.size.width, widths, self.cursor_coordinate.row,
                self.hover_coordinate.row, self.show_cursor, self._show_hover_cursor,
                self._pseudo_class_state)

    def render_line(self, y: int) -> Strip:
        facts = self._pass or self._facts()
        if not facts[0]:
            return super().render_line(y)
        scroll_x, scroll_y = self.scroll_offset
        if not (self.show_header and y < self.header_height):
            y += scroll_y
        return self._render_line(y, scroll_x, scroll_x + facts[2], facts[1])

    def _plain(self) -> bool:
        """Whether the table is laid out as `_render_line` draws it itself: a row cursor, one-line rows,
        no fixed rows or columns, no row labels (DataTable's own drawing serves anything else)."""
        return (self.FAST and self.cursor_type == "row" and not self.fixed_rows and not self.fixed_columns
                and not self._should_render_row_labels)

    def _render_line(self, y: int, x1: int, x2: int, base_style: Style) -> Strip:
        """A row's line from its kept cells, without DataTable's per-row work (most of a frame's time once
        the cells are kept); the header, and any table not `_plain`, as DataTable draws them."""
        facts = self._pass or self._facts()
        plain, _, width, widths, cursor_row, hover_row, show_cursor, show_hover, pseudo = facts
        if not plain:
            return super()._render_line(y, x1, x2, base_style)
        try:
            row_key, line_no = self._get_offsets(y)
        except LookupError:
            return super()._render_line(y, x1, x2, base_style)
        row_index = self._row_locations.get(row_key)
        if row_key is self._header_row_key or row_index is None or line_no:
            return super()._render_line(y, x1, x2, base_style)
        cursor, hover = show_cursor and row_index == cursor_row, row_index == hover_row
        key = (row_index, self._cells.get(row_key.value), cursor, hover, x1, x2, facts)
        strip = self._lines.get(key)
        if strip is None:
            row_style = self._get_row_style(row_index, base_style)
            segments: list[Segment] = []
            for column_index, column_width in enumerate(widths):
                segments.extend(self._render_cell(row_index, column_index, row_style, column_width, cursor,
                                                  hover)[0])
            segments.append(Segment(" " * max(0, width - sum(widths)),
                                    self._extend_style(row_index, row_style, cursor, hover)))
            strip = Strip(line_crop(segments, x1, x2, width)).adjust_cell_length(width, base_style).simplify()
            if len(self._lines) > DRAWN_LINES:
                self._lines.clear()
            self._lines[key] = strip
        return strip

    def _extend_style(self, row_index: int, row_style: Style, cursor: bool, hover: bool) -> Style:
        """The style of the blank past the last column, as DataTable's `_render_line_in_row` makes it."""
        style, _ = self._get_styles_to_render_cell(False, False, False, hover, cursor, self.show_cursor,
                                                   self._show_hover_cursor, False, False)
        return row_style + style + Style.from_meta({"row": row_index, "column": 0, "out_of_bounds": True})

    def _render_cell(self, row_index: int, column_index: int, base_style: Style, width: int,
                     cursor: bool = False, hover: bool = False) -> SegmentLines:
        """A cell's render, kept while the cell's text and place are unchanged; a plain cell (one style, no
        wider than its column) drawn from its `Shape`, not through Rich.

        DataTable keys its own cache on the whole table's update count, so the one changed cell of a live
        run rendered every visible cell again, through Rich, at every frame (most of a frame's time)."""
        column_key = self._column_locations.get_key(column_index)
        if row_index < 0 and column_key is not None:  # a header: its label (the sort column's arrow)
            label = self.columns[column_key].label
            text: tuple[object, ...] = (label.plain, str(label.style), tuple(label.spans))
            cell = None
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
            lines = self._drawn[key] = self._draw_cell(cell, row_index, column_index, base_style, width,
                                                       cursor, hover)
        return lines

    def _draw_cell(self, cell: Cell | None, row_index: int, column_index: int, base_style: Style, width: int,
                   cursor: bool, hover: bool) -> SegmentLines:
        """Render one cell: from its shape where it is plain, else as DataTable does."""
        if cell is not None and self._plain():
            text = cell.__rich__()
            shape_key = (row_index, column_index, str(text.style), text.justify, text.no_wrap, text.overflow,
                         base_style, width, cursor, hover, self.show_cursor, self._show_hover_cursor,
                         self._pseudo_class_state)
            shape = self._shapes.get(shape_key, False)
            if shape is False:
                if len(self._shapes) > DRAWN_CELLS:
                    self._shapes.clear()
                template = Text("X", style=text.style, justify=text.justify, no_wrap=text.no_wrap,
                                overflow=text.overflow, end=text.end)
                shape = self._shapes[shape_key] = Shape.of(
                    self._rich_cell(template, row_index, column_index, base_style, width, cursor, hover)[0],
                    self.cell_padding, text.justify, text.overflow)
            if shape is not None and shape.fits(text):
                return [shape.line(text.plain)]
        return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)

    def _rich_cell(self, text: Text, row_index: int, column_index: int, base_style: Style, width: int,
                   cursor: bool, hover: bool) -> SegmentLines:
        """`text` rendered as DataTable renders a one-line body cell at this place (no fixed cells)."""
        base_style += Style.from_meta({"row": row_index, "column": column_index})
        component_style, post_style = self._get_styles_to_render_cell(
            False, False, False, hover, cursor, self.show_cursor, self._show_hover_cursor,
            self.cursor_foreground_priority == "css", self.cursor_background_priority == "css")
        options = self.app.console_options.update_dimensions(width, 1).update(no_wrap=True)
        return self.app.console.render_lines(
            Styled(Padding(text, (0, self.cell_padding)), pre_style=base_style + component_style,
                   post_style=post_style), options)

    def _clear_caches(self) -> None:
        """DataTable's caches go (a cursor or layout change): the kept cells, lines and shapes with them."""
        super()._clear_caches()
        self._forget_drawn()

    def notify_style_update(self) -> None:
        """A new theme or style (DataTable clears its caches here without `_clear_caches`)."""
        super().notify_style_update()
        self._forget_drawn()

    def _forget_drawn(self) -> None:
        if hasattr(self, "_drawn"):  # (DataTable's own __init__ may clear its caches before ours exist)
            self._drawn.clear()
            self._lines.clear()
            self._shapes.clear()

    def _styled(self, key: str, value: str) -> Cell:
        return Cell(self, key, value)

    def styled(self, key: str, value: str) -> Text:
        """A cell's value as drawn (the subclass's styles)."""
        return Text(value, no_wrap=True)
