"""Stops held while one of our entry points starts (stdlib only): the starter's half and the run's half.

A stop must never find a run's process before its handler is there (the default action kills it, and
the run ends `lost`): whoever starts one of our entry points (the console, the queue waiter) starts it
with the stop signals blocked (`held_stops`, the mask survives fork and exec), and the entry point
releases them once its handler is installed (`release_stops`); a stop sent in between waits, pending,
and then reaches the handler.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


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
