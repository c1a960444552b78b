"""A thread that reads the probe's channel a few times a second: its records come between printed lines
too (a script that prints once an epoch still has its steps, losses and memory written as they come)."""

from __future__ import annotations

import threading
from collections.abc import Callable

POLL_S = 0.1


class ProbeTail(threading.Thread):
    """Calls `poll` every POLL_S until `finish`."""

    def __init__(self, poll: Callable[[], None]) -> None:
        super().__init__(daemon=True, name="probe-tail")
        self.poll = poll
        self.done = threading.Event()

    def run(self) -> None:
        """Poll until finished."""
        while not self.done.wait(POLL_S):
            self.poll()

    def finish(self) -> None:
        """Stop polling (the runner reads the rest itself, at close)."""
        self.done.set()
        if self.is_alive():
            self.join(timeout=2.0)
