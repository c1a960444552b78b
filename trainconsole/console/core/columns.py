"""The runs table's columns and how a cell is cut to fit: what the first frame's empty table needs, apart
from the board (so it is drawn before the board's modules are loaded)."""

from __future__ import annotations

#: The runs table's columns: key and header.
COLUMNS = (
    ("run", "run"), ("status", "status"), ("strategy", "strategy"), ("epoch", "epoch"),
    ("loss", "loss"), ("acc", "acc"), ("rate", "smp/s"), ("elapsed", "elapsed"),
)
#: The column added after those when the home holds runs of more than one host.
HOST_COLUMN = ("host", "host")
#: Between a run cell's label and its tags (the table draws the tags dimmed, after the name).
TAGS_SEP = "\t"


def middle(text: str, width: int) -> str:
    """Shorten from the middle, so both a run's name and the random end of its id stay readable."""
    width = max(width, 3)
    if len(text) <= width:
        return text
    head = (width - 1) - (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head):]
