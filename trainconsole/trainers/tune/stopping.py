"""SIGTERM on a tune run: end the search gracefully through Tune's own interrupt (its SIGUSR1 handler),
which saves the experiment state so that `--resume` continues it. Stdlib only."""

from __future__ import annotations

import signal
from types import FrameType

from ..lifecycle.signals import StopFlag, release_stops

FLAG = StopFlag()


def install() -> None:
    """Route SIGTERM and SIGINT to the flag, and on to Tune once it is running."""

    def handler(signum: int, frame: FrameType | None) -> None:
        FLAG.set(signum)
        forward_to_tune(frame)

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    release_stops()


def requested() -> bool:
    """True once a stop was asked for."""
    return FLAG.is_set()


def forward_to_tune(frame: FrameType | None = None) -> None:
    """If a stop was asked for and Tune has installed its interrupt handler, call it (once is enough)."""
    tune_handler = signal.getsignal(signal.SIGUSR1)
    if FLAG.is_set() and callable(tune_handler):
        tune_handler(signal.SIGUSR1, frame)
