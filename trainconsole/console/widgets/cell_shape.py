"""A runs-table cell's shape: its new text drawn as a few segments, not through Rich (runs_table.py)."""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from rich.text import Text


class Shape:
    """How Rich draws a one-style, one-line cell at one place: the padding's, the text's and the fill's
    styles, learnt once from a one-character template, so that a cell's new text (a live run's loss, at
    every frame) is drawn as a few segments, not through Rich. A test holds it to Rich's drawing."""

    __slots__ = ("pad", "inner", "right", "crop", "pad_style", "text_style", "fill_style")

    def __init__(self, pad: int, inner: int, right: bool, crop: bool, pad_style: Style | None,
                 text_style: Style | None, fill_style: Style | None) -> None:
        self.pad, self.inner, self.right, self.crop = pad, inner, right, crop
        self.pad_style, self.text_style, self.fill_style = pad_style, text_style, fill_style

    @classmethod
    def of(cls, line: list[Segment], pad: int, justify: str | None, overflow: str | None) -> Shape | None:
        """Learn the shape from the template `X`'s line; None where the line is not as expected (then the
        cell is always drawn through Rich)."""
        chars = [(ch, segment.style) for segment in line for ch in segment.text]
        inner, right = len(chars) - 2 * pad, justify == "right"
        if justify not in (None, "default", "left", "right") or inner < 2:
            return None
        at = pad + inner - 1 if right else pad
        if [ch for ch, _ in chars] != [" "] * at + ["X"] + [" "] * (len(chars) - at - 1):
            return None
        pads = {style for _, style in chars[:pad] + chars[pad + inner:]}
        fills = {style for i, (_, style) in enumerate(chars[pad:pad + inner], pad) if i != at}
        if len(pads) > 1 or len(fills) != 1:
            return None
        crop = overflow in (None, "fold", "crop")  # (Rich cuts a one-line text too long at the cell's end)
        return cls(pad, inner, right, crop, next(iter(pads), None), chars[at][1], fills.pop())

    def fits(self, text: Text) -> bool:
        """Whether `text` draws as this shape: one style, printable ASCII, no spaces at its ends (Rich
        strips them), no wider than the cell unless cut at its end."""
        plain = text.plain
        return (not text.spans and (self.crop or len(plain) <= self.inner) and plain.isascii()
                and plain.isprintable() and plain == plain.strip())

    def line(self, plain: str) -> list[Segment]:
        """The cell's segments for this text."""
        plain = plain[: self.inner]
        fill = Segment(" " * (self.inner - len(plain)), self.fill_style)
        text = Segment(plain, self.text_style)
        body = [fill, text] if self.right else [text, fill]
        if not self.pad:
            return body
        pad = Segment(" " * self.pad, self.pad_style)
        return [pad, *body, pad]
