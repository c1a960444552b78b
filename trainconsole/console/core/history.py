"""A metric's history with min/max summaries, so that a million points decimate in a few milliseconds."""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left

FANOUT = 16
LEVELS = 4


class Series:
    """Points (x, y) with increasing x, plus the index of the min and max y in blocks of 16, 256, 4096...

    Appending keeps the summaries up to date in O(levels); `decimate` reads the coarsest summary that is
    still finer than the screen, so spikes survive drawing however long the history grows.
    """

    def __init__(self) -> None:
        self.xs = array("d")
        self.ys = array("d")
        self._lo: list[array[int]] = []  # made by the first append: 10,000 rows from the run index
        self._hi: list[array[int]] = []  # hold four empty series each

    def __len__(self) -> int:
        return len(self.ys)

    @property
    def last(self) -> tuple[float, float] | None:
        """The newest point, or None."""
        return (self.xs[-1], self.ys[-1]) if self.ys else None

    def append(self, x: float, y: float) -> bool:
        """Add a point; a non-finite y is refused, and an x at or before the last drops the later points.

        (A resumed run replays steps after its checkpoint: the replay replaces what the old process wrote.)
        """
        if not (math.isfinite(x) and math.isfinite(y)):
            return False
        if self.xs and x <= self.xs[-1]:
            self.truncate(bisect_left(self.xs, x))
        if not self._lo:
            self._lo, self._hi = [array("q") for _ in range(LEVELS)], [array("q") for _ in range(LEVELS)]
        i = len(self.ys)
        self.xs.append(x)
        self.ys.append(y)
        ys, size = self.ys, FANOUT
        for lo, hi in zip(self._lo, self._hi, strict=True):
            j = i // size
            if j == len(lo):
                lo.append(i)
                hi.append(i)
            else:
                if y < ys[lo[j]]:
                    lo[j] = i
                if y > ys[hi[j]]:
                    hi[j] = i
            size *= FANOUT
        return True

    def extend(self, xs: list[float], ys: list[float]) -> None:
        """`append` each point in turn, the summaries updated a block at a time where the points come after
        the last one, finite and in increasing x (a live read's batch): else one `append` each."""
        n0 = len(self.ys)
        last = self.xs[-1] if n0 else -math.inf
        if len(xs) < 2 or not _ascending(xs, ys, last):
            for x, y in zip(xs, ys, strict=True):
                self.append(x, y)
            return
        if not self._lo:
            self._lo, self._hi = [array("q") for _ in range(LEVELS)], [array("q") for _ in range(LEVELS)]
        self.xs.extend(xs)
        self.ys.extend(ys)
        n1, at, size = len(self.ys), self.ys.__getitem__, FANOUT
        for lo, hi in zip(self._lo, self._hi, strict=True):  # (as `append`: each block's first min and max)
            start = n0
            while start < n1:
                j = start // size
                end = min(n1, (j + 1) * size)
                i_lo, i_hi = min(range(start, end), key=at), max(range(start, end), key=at)
                if j == len(lo):
                    lo.append(i_lo)
                    hi.append(i_hi)
                else:
                    if at(i_lo) < at(lo[j]):
                        lo[j] = i_lo
                    if at(i_hi) > at(hi[j]):
                        hi[j] = i_hi
                start = end
            size *= FANOUT

    def truncate(self, n: int) -> None:
        """Keep only the first `n` points."""
        del self.xs[n:], self.ys[n:]
        size = FANOUT
        for lo, hi in zip(self._lo, self._hi, strict=True):
            blocks = -(-n // size)
            del lo[blocks:], hi[blocks:]
            if n % size:
                start = (blocks - 1) * size
                lo[-1] = min(range(start, n), key=self.ys.__getitem__)
                hi[-1] = max(range(start, n), key=self.ys.__getitem__)
            size *= FANOUT

    def decimate(self, buckets: int) -> tuple[list[float], list[float]]:
        """At most ~2 x `buckets` points in x order: each bucket's min and max, so spikes stay visible."""
        n = len(self.ys)
        if n <= 2 * buckets:
            return self.xs.tolist(), self.ys.tolist()
        lo, hi = self._summary(4 * buckets)
        ys, keep = self.ys, []
        per = len(lo) / buckets
        for b in range(buckets):
            a, z = int(b * per), int((b + 1) * per)
            if a >= z:
                continue
            i_lo = min(lo[a:z], key=ys.__getitem__)
            i_hi = max(hi[a:z], key=ys.__getitem__)
            keep += (i_lo, i_hi) if i_lo <= i_hi else (i_hi, i_lo)
        return [self.xs[i] for i in keep], [ys[i] for i in keep]

    def _summary(self, limit: int) -> tuple[array[int] | range, array[int] | range]:
        """The finest (argmin, argmax) blocks with at most `limit` entries (raw points if few enough)."""
        if len(self.ys) <= limit:
            return range(len(self.ys)), range(len(self.ys))
        for lo, hi in zip(self._lo, self._hi, strict=True):
            if len(lo) <= limit:
                return lo, hi
        return self._lo[-1], self._hi[-1]


def _ascending(xs: list[float], ys: list[float], last: float) -> bool:
    """Every x after `last` and after the x before it, every point finite."""
    isfinite = math.isfinite
    for x, y in zip(xs, ys, strict=True):
        if not (x > last and isfinite(x) and isfinite(y)):
            return False
        last = x
    return True
