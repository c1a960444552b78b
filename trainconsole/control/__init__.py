"""The control layer: the one door through which every front end (the CLI, the console's keys, the
browser) acts on runs, and the one place on the console side that writes into a run directory."""

from .actions import Control, Refused

__all__ = ["Control", "Refused"]
