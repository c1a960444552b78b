"""Process identity and teardown: a pid is trusted only together with its start time (pids get reused)."""

from __future__ import annotations

import os
import signal
import time

import psutil

#: How far a recorded start time may differ from psutil's reading and still be the same process.
START_TIME_SLACK_S = 0.05


def start_time(pid: int) -> float | None:
    """The process's start time (seconds since the epoch), or None if it does not exist."""
    try:
        return psutil.Process(pid).create_time()
    except (psutil.Error, ValueError):
        return None


def find(pid: int | None, started: float | None) -> psutil.Process | None:
    """The live process with this pid *and* start time; None if it is gone, a zombie, or a stranger."""
    if not pid or started is None:
        return None
    try:
        proc = psutil.Process(pid)
        if abs(proc.create_time() - started) > START_TIME_SLACK_S:
            return None
        return None if proc.status() == psutil.STATUS_ZOMBIE else proc
    except psutil.Error:
        return None


def family(leader: psutil.Process | None, pgid: int | None, since: float) -> list[psutil.Process]:
    """The leader, all its descendants, and every process of its group started since `since`."""
    procs: dict[int, psutil.Process] = {}
    if leader is not None:
        procs[leader.pid] = leader
        try:
            procs.update((p.pid, p) for p in leader.children(recursive=True))
        except psutil.Error:
            pass
    if pgid:
        procs.update((p.pid, p) for p in _group(pgid, since))
    procs.pop(os.getpid(), None)
    return list(procs.values())


def _group(pgid: int, since: float) -> list[psutil.Process]:
    # A group id stays taken while any member lives, so if its leader's pid now belongs to a process
    # started at another time, the group is someone else's: leave it alone.
    leader_started = start_time(pgid)
    if leader_started is not None and abs(leader_started - since) > START_TIME_SLACK_S:
        return []
    found = []
    for proc in psutil.process_iter(["create_time"]):
        try:
            if os.getpgid(proc.pid) == pgid and proc.info["create_time"] >= since - START_TIME_SLACK_S:
                found.append(proc)
        except (OSError, psutil.Error):
            continue
    return found


def kill_all(procs: list[psutil.Process], timeout: float = 3.0) -> list[psutil.Process]:
    """SIGKILL every process and wait until each is gone (a zombie counts as gone); return survivors."""
    for proc in procs:
        try:
            proc.send_signal(signal.SIGKILL)
        except psutil.Error:
            pass
    deadline = time.monotonic() + timeout
    alive = procs
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if _running(p)]
        if alive:
            time.sleep(0.02)
    return alive


def _running(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
