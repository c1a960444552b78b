"""Progress bars (tqdm) in a stream of output: which bar a counter belongs to, and its step (pure).

A bar is known by its counter, not by its line: a line printed between two of its states (tqdm.write)
or a state on a line of its own does not start a new bar. Nested bars are told apart by their total: an
outer bar (one that counts epochs, or one without metrics while another shows them) does not move the
step; an `epochs` bar gives the epoch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: tqdm's count in a progress bar: ` 25/50 [00:01<00:01, ...`.
PROGRESS = re.compile(r"(?<![\d.])(?P<n>\d+)/(?P<total>\d+)\s*\[")
#: An outer bar counting epochs (`epochs 1/3 [`, `Epochs:  33%|###  | 1/3 [`), not a bar of one epoch's
#: batches that names its epoch (`Epoch 2/10:  40%|####  | 8/20 [`).
EPOCH_BAR = re.compile(r"\bepochs?\b(?!\s*\[?\d)", re.IGNORECASE)


@dataclass
class Bar:
    """A progress bar being drawn on one stream: the step before it, its total and the count last drawn."""

    base: int
    total: int
    n: int

    def goes_on(self, n: int, total: int) -> bool:
        """Whether `n/total` is this bar drawn again (a new bar starts over, or has another total)."""
        return total == self.total and n >= self.n


class Bars:
    """The bars drawn on each stream of one script."""

    def __init__(self) -> None:
        self.bars: dict[tuple[str, int], Bar] = {}  # per stream and total, a progress bar's count
        self.metric_bars: dict[str, int] = {}  # per stream, the total of the bar that shows metrics
        self.epochs_done: int | None = None  # the count of an outer bar of epochs

    def outer(self, stream: str, line: str, total: int, shows_metrics: bool) -> bool:
        """Whether a counter is an outer bar of nested ones (`for epoch in tqdm(...)` around a bar of the
        batches): one without metrics that counts epochs, or while another bar of the stream shows the
        metrics. It does not move the step (the inner bar's count goes on across epochs)."""
        if shows_metrics:
            self.metric_bars[stream] = total
            return False
        return bool(EPOCH_BAR.search(line)) or self.metric_bars.get(stream, total) != total

    def step(self, stream: str, n: int, total: int, step: int) -> tuple[int, bool]:
        """The step of count N of a bar of TOTAL, STEP being the run's step before this state; and
        whether the state begins a new bar."""
        bar: Bar | None = self.bars.get((stream, total))
        new = bar is None or not bar.goes_on(n, total)
        if new:
            bar = self.bars[(stream, total)] = Bar(base=step, total=total, n=n)
        bar.n = n
        if self.epochs_done is not None:  # under a bar of epochs: whole epochs of this bar before it
            return self.epochs_done * total + n, new
        return bar.base + n, new
