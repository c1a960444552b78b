"""Tables a script prints, one row an epoch, under a header row that names the columns (pure).

skorch's history (`  epoch    train_loss    valid_acc    valid_loss     dur`, a rule of dashes, then rows
of numbers, ANSI-coloured where a value improved), tabulate's and rich's bordered tables (`| Epoch |
Train Loss |`), units in a column's name (`dur (s)`, `time [ms]`): a row is read as `name value` fields
under the header's names, so each value keeps the name the script gave its column.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .names import is_metric, kind, name
from .plain import plain

NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?%?")
#: A cell: text up to two spaces, a border (`|`, box-drawing bars) or a tab.
CELL = re.compile(r"[^\s|│┃║](?:[^|│┃║\t]*?[^\s|│┃║])??(?=\s{2,}|\s*[|│┃║\t]|\s*$)")
#: A digit that is no part of a name (`acc@1`, `top5` are names; `0.5`, `[0]` are values).
LONE_DIGIT = re.compile(r"(?<![A-Za-z_@])\d")
#: A rule under (or around) the header: dashes, equals, box-drawing lines, `+` corners.
RULE = re.compile(r"^[\s\-=+|─━═┼╪┿╋┬┴├┤┌┐└┘╭╮╯╰│┃║:]+$")
#: A unit at the end of a column's name: `dur (s)`, `time [ms]`.
UNIT = re.compile(r"\s*[(\[](?P<unit>[^)\]]*)[)\]]\s*$")
#: Marks beside a value that say something of it, not a number (skorch's `+` of a checkpoint column).
MARKS = {"+", "*", "✓", "-"}


@dataclass
class Header:
    """The names of a table's columns, in order, and where each stands on the line."""

    names: list[str]
    spans: list[tuple[int, int]]


class Tables:
    """The header last printed, and each row under it read as `name value` fields."""

    def __init__(self) -> None:
        self.header: Header | None = None

    def named(self, line: str) -> str:
        """LINE as `name value | name value` fields when it is a row under a header; a header (or a
        rule) as an empty line; any other line as it is (and then no table goes on)."""
        text = plain(line).rstrip()
        if not text.strip() or RULE.match(text):
            return "" if (self.header and text.strip()) else line
        cells = list(CELL.finditer(text))
        header = _header(cells)
        if header is not None:
            self.header = header
            return ""
        row = self._row(cells)
        if row is None:
            self.header = None
        return row if row is not None else line

    def _row(self, cells: list[re.Match[str]]) -> str | None:
        """`epoch 1 | train_loss 0.69 | ...`: each number under the column it stands in (marks and
        empty cells left out)."""
        header = self.header
        values = [c for c in cells if c[0] not in MARKS]
        if header is None or not values or not all(NUMBER.fullmatch(c[0]) for c in values):
            return None
        columns = [_under(header, c.span()) for c in values]
        if len(set(columns)) != len(columns):
            return None
        return " | ".join(f"{header.names[i]} {c[0]}" for i, c in zip(columns, values, strict=True)
                          if header.names[i])


def _under(header: Header, span: tuple[int, int]) -> int:
    """The column a cell stands in: the one it overlaps most, else the nearest (numbers are aligned
    right or left under their name)."""
    def closeness(i: int) -> tuple[int, int]:
        start, end = header.spans[i]
        overlap = min(end, span[1]) - max(start, span[0])
        return overlap, -min(abs(end - span[1]), abs(start - span[0]))
    return max(range(len(header.spans)), key=closeness)


def _header(cells: list[re.Match[str]]) -> Header | None:
    """The header a row of names is: two columns or more, no value among them, one a metric or the
    epoch, none of more than four words (so a sentence is no header)."""
    if len(cells) < 2 or any(LONE_DIGIT.search(c[0]) or len(c[0].split()) > 4 for c in cells):
        return None
    names = [_column(c[0]) for c in cells]
    if not any(is_metric(n) or kind(n) in ("epoch", "counter") for n in names if n):
        return None
    return Header(names, [c.span() for c in cells])


def _column(cell: str) -> str:
    """A column's field: its name without the unit (`dur (s)` -> `dur`; a time keeps its unit: `time (ms)`
    -> `time_ms`)."""
    unit = UNIT.search(cell)
    bare = cell[:unit.start()] if unit else cell
    field = name(bare) if bare.strip() else ""
    if unit and unit["unit"].strip() in ("s", "ms") and kind(field) == "timing":
        field = f"{field}_{unit['unit'].strip()}"
    return field
