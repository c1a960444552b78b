"""This host: a run whose process is in this host's process table (stdlib only)."""

from __future__ import annotations

import os

from ..processes import process_alive
from . import Info, Place


class Local(Place):
    """A run's process here: alive while its pid *and* start time match (a reused pid is a stranger)."""

    name = "local"

    def holds(self, info: Info) -> bool:
        """Every run that no other place holds."""
        return True

    def alive(self, run_path: str | os.PathLike[str], info: Info, now: float | None = None) -> bool:
        """By pid and start time."""
        return process_alive(info.get("pid"), info.get("pid_started"))


PLACE = Local()
