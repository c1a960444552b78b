"""The run's step and epoch from where the script's lines say they were printed (pure).

A counter may restart each epoch (`[0/5][124/125]`, `Epoch 2, Batch 0`, Keras' `3/10`): the step never
does. At an epoch that restarts the counter, the epochs before it count whole (`epoch × batches per
epoch`, when the line gives the total; else the last counter plus the interval lines were printed at).
A sample counter (`[640/60000 (1%)]`) counts batches when the script's arguments give the batch size.
Lines that name a rank count for the lowest rank seen, once per step.
"""

from __future__ import annotations

import math
import re

from .parsed import Where

#: The batch size among a script's arguments: `--batch-size 64`, `--batch_size=64`, `-b 64`.
BATCH_ARG = re.compile(r"^(?:--batch[-_]size|-b)(?:=(?P<value>\d+))?$")
#: The number of epochs among them: `--epochs 10`, `--num_train_epochs=3`, `--niter 25` (dcgan).
EPOCHS_ARG = re.compile(r"^(?:--epochs|--num[-_]train[-_]epochs|--niter|--max[-_]epochs)"
                        r"(?:=(?P<value>\d+))?$")


def batch_size(args: list[str]) -> int | None:
    """The batch size the script's arguments give, if they give one."""
    return _arg(args, BATCH_ARG)


def epochs(args: list[str]) -> int | None:
    """The number of epochs the script's arguments give, if they give one (the run's epoch total)."""
    return _arg(args, EPOCHS_ARG)


def _arg(args: list[str], option: re.Pattern[str]) -> int | None:
    for i, arg in enumerate(args):
        match = option.match(arg)
        if match:
            value = match["value"] or (args[i + 1] if i + 1 < len(args) else "")
            return int(value) if value.isdigit() and int(value) > 0 else None
    return None


class Steps:
    """Where the run is: its step, epoch and epoch total, from one line's `Where` after another."""

    def __init__(self, batch_size: int | None = None) -> None:
        self.batch_size = batch_size
        self.step = 0
        self.epoch: int | float | None = None
        self.epochs: int | None = None
        self.rank: int | None = None  # the rank whose lines count
        self.first_epoch: int | float | None = None  # the epoch of the first counter: epochs count from it
        self.offset = 0  # steps of the epochs (or bars) before the counter's
        self.last: int | None = None  # the last counter, in batches
        self.last_epoch: int | float | None = None  # the epoch of the last counter
        self.interval: int | None = None  # the smallest rise of the counter between two lines
        self.first: int | None = None  # the first counter: 0 when the script counts from 0

    def counts(self, where: Where) -> bool:
        """Whether a line counts: it names no rank, or the lowest rank seen (rank 0, normally)."""
        if where.rank is None:
            return True
        if self.rank is None or where.rank < self.rank:
            self.rank = where.rank
        return where.rank == self.rank

    def place(self, where: Where) -> int | None:
        """Take a line's epoch; the step its counter or stated step says (None when it says none)."""
        if where.epoch is not None:
            self.epoch = where.epoch
        self.epochs = where.epochs or self.epochs
        if where.step is not None:
            return where.step
        if where.counter is None:
            return None
        counter, total = self._batches(where)
        if self.first_epoch is None:
            self.first_epoch, self.first = self.epoch, counter
        self._restart(counter, total)
        self.last, self.last_epoch = counter, self.epoch
        return self.offset + counter

    def preview(self, where: Where) -> int | None:
        """The step a line would be placed at, without taking it (its epoch and counter)."""
        saved = dict(vars(self))
        try:
            return self.place(where)
        finally:
            vars(self).update(saved)

    def _batches(self, where: Where) -> tuple[int, int | None]:
        counter, total, size = where.counter or 0, where.total, self.batch_size
        if where.samples and size and total and total > size and counter % size == 0:
            return counter // size, math.ceil(total / size)
        return counter, total

    def _restart(self, counter: int, total: int | None) -> None:
        """Move the offset when the counter starts over (a new epoch, or a new bar)."""
        if self.last is None:
            return
        new_epoch = self.epoch != self.last_epoch
        if counter > self.last:
            self.interval = min(self.interval or counter - self.last, counter - self.last)
            return
        if not (counter < self.last or new_epoch):
            return
        if new_epoch and total and isinstance(self.epoch, int) and isinstance(self.first_epoch, int):
            self.offset = (self.epoch - self.first_epoch) * total
        else:
            self.offset += total or self._epoch_length()

    def _epoch_length(self) -> int:
        """A guess of the last epoch's length when no line gave it: counted from 0 and printed every k
        batches, the last printed plus k (`0, 10, .. 90`: 100); counted from k, the last printed."""
        last = self.last or 0
        return last + (self.interval or 1) if self.first == 0 else last
