"""Where a run lives, the control side: each place's readers' half (`trainconsole.protocol.places`) with
`start`, `stop` and `kill` of a run there. `runs.py` starts, stops and kills every run through `of` and
`for_config`, whatever its place; a place's control half is found by the name the protocol registered.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from trainconsole.protocol import Config, RunDir
from trainconsole.protocol import places as readers
from trainconsole.protocol.run_row import LIVE

#: A run's one status (`runs.status`), which a place's stop and kill ask as they wait.
Status = Callable[[RunDir], str]


@dataclass(frozen=True)
class Kill:
    """What a kill did: the run's status before it, whether it ended the run now (a `killed` logged by
    this kill, here or by the run's host on request), and the pids that outlived it (none, normally)."""

    was: str
    ended: bool
    survivors: list[int] = field(default_factory=list)


class Place(readers.Place):
    """A place with its lifecycle: what a control half adds to its readers' half."""

    def start(self, run: RunDir, info: dict[str, Any], command: list[str], config: Config | None,
              ran_s: float) -> None:
        """Start the run's process there (the caller holds the run's lock) and record it in run.json;
        `config` is the run's (None on a resume: read it if the place needs it), `ran_s` the seconds its
        earlier processes ran."""
        raise NotImplementedError

    def stop(self, run: RunDir, status: Status, grace: float) -> str:
        """Ask the run to checkpoint and stop; kill it if it outlives `grace` seconds. Its status after."""
        raise NotImplementedError

    def kill(self, run: RunDir, status: Status) -> Kill:
        """End the run's whole process family there and record `killed` (`protocol.kills`)."""
        raise NotImplementedError

    def ended_by(self, run: RunDir, status: Status, kill: Callable[[], list[int]]) -> Kill:
        """What `kill` did, where it says only who survived: it ended the run now when the run was alive
        (or lost with a process left) and is `killed` after, with none left."""
        was = status(run)
        survivors = kill()
        ended = not survivors and was in (*LIVE, "lost") and status(run) == "killed"
        return Kill(was, ended, survivors)


def named(name: str) -> Place:
    """The control half of the place of this name."""
    return importlib.import_module(readers.registration(name).control).PLACE


def of(info: dict[str, Any]) -> Place:
    """The place run.json says the run lives in, with its lifecycle."""
    return named(readers.of(info).name)


def for_config(config: Config) -> Place:
    """The place a new run of this config goes to, with its lifecycle."""
    return named(readers.for_config(config).name)
