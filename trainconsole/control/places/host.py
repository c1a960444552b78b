"""Stop and kill of a run whose process lives on another host that shares the home.

This host cannot signal a process in another process table (and a pid here with the same number and
start time is a stranger), so both go as requests into the run's directory (`protocol.run_requests`),
which the run's watchdog obeys on its own host; then the run is watched through its event log and its
heartbeat (`protocol.hosts`) until it has ended. `runs.stop` and `runs.kill` come here for such a run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from trainconsole.protocol import Config, RunDir, run_requests
from trainconsole.protocol.places import host as hosts

from . import Kill, Place, Status, local

#: How long a kill request may take: the watchdog looks about once a second, then kills and records.
KILL_WAIT_S = 15.0


def stop(run: RunDir, status: Callable[[RunDir], str], grace: float) -> str:
    """Ask the run to checkpoint and stop; ask for a kill if it outlives `grace` seconds. Its status."""
    with run.lock():
        info = run.read_info()
        if status(run) not in ("running", "queued"):
            return status(run)
        run_requests.request(run.path, run_requests.STOP, info, hosts.this_host())
    if not _ended(run, status, grace):
        kill(run, status)
    return status(run)


def kill(run: RunDir, status: Callable[[RunDir], str]) -> list[int]:
    """Ask the run's host to kill its whole process tree; wait until it has (its `killed` event). Returns
    the run's pid if it has not in `KILL_WAIT_S` (a pid on its host), else nothing. A run already `lost`
    gets the request too (its host may only be slow to beat), without the wait."""
    with run.lock():
        info = run.read_info()
        was = status(run)
        if was not in ("running", "queued", "lost"):
            return []
        run_requests.request(run.path, run_requests.KILL, info, hosts.this_host())
    if was == "lost" or _ended(run, status, KILL_WAIT_S):
        return []
    return [info["pid"]] if info.get("pid") else []


def _ended(run: RunDir, status: Callable[[RunDir], str], wait: float) -> bool:
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if status(run) not in ("running", "queued"):
            return True
        time.sleep(0.2)
    return status(run) not in ("running", "queued")


def is_remote(info: dict[str, Any]) -> bool:
    """Whether the run's process is on another host (only requests reach it)."""
    return hosts.remote(info) is not None



class Host(hosts.Host, Place):
    """A run on another host of the shared home: stopped and killed by requests its watchdog obeys."""

    def start(self, run: RunDir, info: dict[str, Any], command: list[str], config: Config | None,
              ran_s: float) -> None:
        """Here: a run of another host that is resumed on this one moves here."""
        local.PLACE.start(run, info, command, config, ran_s)

    def stop(self, run: RunDir, status: Status, grace: float) -> str:
        """A stop request; a kill request if it outlives `grace` seconds."""
        return stop(run, status, grace)

    def kill(self, run: RunDir, status: Status) -> Kill:
        """A kill request, waited for."""
        return self.ended_by(run, status, lambda: kill(run, status))


PLACE = Host()
