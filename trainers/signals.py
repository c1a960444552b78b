"""Graceful stop: SIGTERM (and SIGINT) only set a flag; the loop finishes its step and checkpoints.

A stop must never find a run's process before its handler is there (the default action kills it, and
the run ends `lost`): whoever starts one of our entry points starts it with the stop signals blocked
(`held_stops`, the mask survives fork and exec), and the entry point releases them once its handler is
installed (`release_stops`); a stop sent in between waits, pending, and then reaches the handler.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from types import FrameType

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class StopFlag:
    """Set by a signal, read by the training loop once per step (a plain attribute: signal-safe, cheap)."""

    def __init__(self) -> None:
        self._set = False
        self.signal: int | None = None

    def set(self, signum: int | None = None) -> None:
        """Ask the run to stop after the current step."""
        self._set = True
        self.signal = signum

    def is_set(self) -> bool:
        """True once a stop was asked for."""
        return self._set


def install_stop_handlers(flag: StopFlag) -> None:
    """Route SIGTERM and SIGINT to `flag`; nothing else happens inside the handler."""

    def handler(signum: int, frame: FrameType | None) -> None:
        flag.set(signum)

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    release_stops()


@contextlib.contextmanager
def held_stops() -> Iterator[None]:
    """Block the stop signals in this thread for the block: a process started inside starts with them
    blocked (pending until it calls `release_stops`)."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def release_stops() -> None:
    """Unblock the stop signals, once this process's handlers are installed; a pending stop arrives now."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


def hold_stops() -> None:
    """Block the stop signals until the next `release_stops` (across an exec too)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
