"""Lines written above a tqdm bar, placed at the count the bar shows when it is redrawn after them (pure).

tqdm's `write` clears the bar (spaces, `\\r`), writes the line (HF Trainer: to stdout) and redraws the bar
(stderr) at its current count: that count is the line's step. The two pipes are read apart, so a redraw
may be read before or after its line: the k-th line written takes the k-th redraw of the stream's first
bar (the Trainer's; an evaluation's bar is another, and so is a bar cleared at another position).
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

#: Redraws kept for lines not read yet (the stderr reader may run ahead of stdout's).
KEPT = 4096
#: How long a line waits for a first bar before the lines are taken to have none (tqdm off: counted).
NO_BAR_S = 1.0

Waiting = tuple[Any, dict[str, Any]]  # a line's Parsed, and where it was printed


class Redraws:
    """Pairs lines written above a bar with the bar's redraws, in order."""

    def __init__(self) -> None:
        self.cleared: dict[str, bool] = {}  # per stream, whether its last state cleared the bar
        self.main: dict[str, int] = {}  # per stream, the total of its first bar
        self.counts: deque[int] = deque(maxlen=KEPT)  # redraws no line took yet
        self.waiting: deque[Waiting] = deque()  # lines no redraw placed yet
        self.since: float | None = None  # when the first line began to wait with no bar seen

    def state(self, stream: str, line: str, text: str) -> None:
        """A refreshed state without a counter (LINE as written, TEXT plain): spaces alone clear the bar;
        spaces with escape codes clear a bar at another position (`\\x1b[A`); escape codes alone nothing."""
        if text:
            self.cleared[stream] = not text.strip() and line == text

    def bar(self, stream: str, total: int, step: int) -> Waiting | None:
        """A bar's state at STEP: a line waiting for this redraw, now placed (else None)."""
        main = self.main.setdefault(stream, total)
        if not (self.cleared.pop(stream, False) and total == main):
            return None
        if self.waiting:
            return self.waiting.popleft()
        self.counts.append(step)
        return None

    def line(self, waiting: Waiting) -> int | None:
        """A line written above the bar: its step if its redraw was read already, else None (it waits)."""
        if self.counts:
            return self.counts.popleft()
        self.waiting.append(waiting)
        return None

    def barless(self, bars_seen: bool) -> bool:
        """Whether the lines come without a bar (HF's PrinterCallback, tqdm off): none was seen in the
        second after a line began to wait for one. (The first line waits: its bar may not be read yet.)"""
        if bars_seen:
            return False
        now = time.monotonic()
        self.since = self.since or now
        return now - self.since >= NO_BAR_S

    def rest(self) -> list[Waiting]:
        """The lines no redraw came for (the output ended)."""
        rest, self.waiting = list(self.waiting), deque()
        return rest
