"""One home shared by several hosts: whether a run's process lives, asked from any of them (stdlib only).

On the run's own host (run.json's `host`, or a run with no host recorded) the answer is its pid *and*
start time (`processes.process_alive`). From any other host the pid means nothing (it is another process
table), so the answer is the run's heartbeat: alive while the heartbeat of the process run.json names is
younger than `heartbeat.silence_s()` (or, before its first one, while its launch is), and not once it said
it ended. The run status, the lifecycle guards, the console's rows and `compare` all ask `alive`.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any

from .. import heartbeat
from ..processes import process_alive, same_start


def this_host() -> str:
    """This host's name, as run.json's `host` records it."""
    return socket.gethostname()


def remote(info: dict[str, Any]) -> str | None:
    """The run's host if that is not this one (None: it is this host's, or says no host)."""
    host = info.get("host")
    return host if host and host != this_host() else None


def alive(run_path: str | os.PathLike[str], info: dict[str, Any], now: float | None = None) -> bool | None:
    """Whether the run's current process lives: by pid and start time here, by heartbeat elsewhere; a
    Slurm run's by its job too (`slurm_jobs.alive`: None while just submitted)."""
    if slurm_says(info):
        from . import slurm as slurm_jobs

        return slurm_jobs.alive(run_path, info, _process_alive)
    return _process_alive(run_path, info, now)


def slurm_says(info: dict[str, Any]) -> bool:
    """Whether the run is a Slurm run whose job still has a say in its status: not ended, or ended a
    moment ago without a stop of ours (an outside `scancel` looks like a stop to the run)."""
    if "slurm" not in info:
        return False
    if not ended(info):
        return True
    from . import slurm as slurm_jobs

    return slurm_jobs.ending(info)


def _process_alive(run_path: str | os.PathLike[str], info: dict[str, Any], now: float | None = None) -> bool:
    if remote(info) is None:
        return process_alive(info.get("pid"), info.get("pid_started"))
    if ended(info):  # no file to read for a run that has ended (most of a home's)
        return False
    return heard_from(info, heartbeat.read(run_path), time.time() if now is None else now)


def ended(info: dict[str, Any]) -> bool:
    """Whether run.json says its current process has ended (`ended_at` since its launch)."""
    end = info.get("ended_at")
    return end is not None and end >= (info.get("started_at") or 0.0)


def heard_from(info: dict[str, Any], beat: heartbeat.Beat | None, now: float) -> bool:
    """The rule for a run on another host: the process run.json names (host, pid, start time) beat within
    the allowed silence and has not said it ended; its launch counts as its first beat. A heartbeat of an
    earlier process of the run (before a resume) says nothing about this one."""
    pid, started = info.get("pid"), info.get("pid_started")
    if not pid or started is None:
        return False
    if ended(info):
        return False
    last = info.get("started_at") or 0.0
    if beat is not None and (beat.host, beat.pid) == (info.get("host"), pid) \
            and same_start(beat.pid_started, started):
        if beat.ended:
            return False
        last = max(last, beat.t)
    return now - last <= heartbeat.silence_s()
