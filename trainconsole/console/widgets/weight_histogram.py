"""The weights view (in the plot pane's place, `h`): one layer's distribution, a sparkline row per epoch."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from trainconsole.console.core.weights import Rows, Snapshot, rows

LABEL = 7  # "ep  12 " before each row


class WeightHistogram(Static):
    """Draws one layer's histograms over epochs on an axis they share; `[` and `]` choose the layer."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.history: list[Snapshot] = []
        self.message = "no run selected"
        self._key: tuple[object, ...] | None = None

    def on_mount(self) -> None:
        """Title the pane."""
        self.border_title = "weights"

    def show(self, history: list[Snapshot], title: str, message: str = "") -> None:
        """Draw `history` (one layer, oldest epoch first) under `title`, or `message` if it is empty."""
        key = (id(history), len(history), history[-1] if history else None, title, message)
        if key == self._key:  # the plot's timer calls this while the run trains: redraw only news
            return
        self._key, self.history, self.message = key, history, message
        self.border_title = title
        self.border_subtitle = "[ ] layer · h loss plot"
        self.refresh()

    def render(self) -> Text:
        """The rows for the pane's current size (the newest epochs that fit)."""
        width, height = self.content_size.width - LABEL, self.content_size.height - 1  # - the axis
        drawn = rows(self.history, width, height) if width > 0 and height > 0 else None
        if drawn is None:
            return Text(self.message or "no histograms yet: one comes at each epoch's end", style="dim")
        return _text(drawn, width)


def _text(drawn: Rows, width: int) -> Text:
    text = Text(no_wrap=True, overflow="crop")
    for epoch, line in drawn.rows:
        text.append(f"ep{epoch:>4} ", style="dim")
        text.append(line + "\n", style="cyan")
    text.append(" " * LABEL + axis(drawn.low, drawn.high, width), style="dim")
    return text


def axis(low: float, high: float, width: int) -> str:
    """`-0.12    0    0.15`: the ends of the shared axis, and where zero falls between them."""
    ends = f"{low:.3g}", f"{high:.3g}"
    line = list(ends[0] + ends[1].rjust(max(1, width - len(ends[0]))))
    if low < 0 < high:
        zero = min(width - 1, int(-low / (high - low) * width))
        if len(ends[0]) < zero < len(line) - len(ends[1]) - 1:
            line[zero] = "0"
    return "".join(line)
