"""One home shared by several hosts: whether a run's process lives, asked from any of them (stdlib only).

On the run's own host (run.json's `host`, or a run with no host recorded) the answer is its pid *and*
start time (`processes.process_alive`). From any other host the pid means nothing (it is another process
table), so the answer is the run's heartbeat: alive while the heartbeat of the process run.json names is
younger than `heartbeat.silence_s()` (or, before its first one, while its launch is), and not once it said
it ended. The run status, the lifecycle guards, the console's rows and `compare` ask `places.alive`,
which asks this place for such a run.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any

from .. import heartbeat, places
from ..processes import same_start
from . import Info, Place


def this_host() -> str:
    """This host's name, as run.json's `host` records it."""
    return socket.gethostname()


def remote(info: dict[str, Any]) -> str | None:
    """The run's host if that is not this one (None: it is this host's, or says no host)."""
    host = info.get("host")
    return host if host and host != this_host() else None


class Host(Place):
    """A run whose process is on another host that shares the home: judged by its heartbeat."""

    name = "host"

    def holds(self, info: Info) -> bool:
        """A run whose run.json names another host."""
        return remote(info) is not None

    def alive(self, run_path: str | os.PathLike[str], info: Info, now: float | None = None) -> bool:
        """By heartbeat (no file read for a run that has ended: most of a home's)."""
        if ended(info):
            return False
        return heard_from(info, heartbeat.read(run_path), time.time() if now is None else now)

    def watched(self, info: Info) -> bool:
        """Always: a heartbeat may come back (a slow file system)."""
        return True


PLACE = Host()


def process_alive_anywhere(run_path: str | os.PathLike[str], info: Info, now: float | None = None) -> bool:
    """Whether the process run.json names lives, wherever it runs: here by pid and start time, on another
    host by heartbeat (the rule a scheduler's place applies once its job runs)."""
    place = PLACE if remote(info) is not None else places.named("local")
    return bool(place.alive(run_path, info, now))


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
