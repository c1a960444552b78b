"""Graceful stop: SIGTERM (and SIGINT) only set a flag; the loop finishes its step and checkpoints.

The stops held while an entry point starts (`held_stops`, `release_stops`) are the protocol's
(`trainconsole/protocol/stops.py`): the console holds them too when it starts a run.
"""

from __future__ import annotations

import signal
from types import FrameType

from trainconsole.protocol.stops import STOP_SIGNALS, hold_stops, release_stops

__all__ = ["STOP_SIGNALS", "StopFlag", "hold_stops", "install_stop_handlers", "release_stops"]


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
