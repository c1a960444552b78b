"""Processes, the one place that knows them: identity, liveness, the tree under a process, its group, and
killing them all. A pid is trusted only together with its start time, since pids get reused.

Liveness reads `/proc` (stdlib, cheap enough for `ls` over hundreds of runs); the tree walk and the kill
use psutil, imported when first needed so that importing the protocol stays light. Used by the run
status (`status.py`), the console's stop and kill, the DDP launcher's reaper and the script runner.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psutil

#: How far a recorded start time may differ from the kernel's reading and still be the same process
#: (the kernel counts in clock ticks, 1/100 s; psutil and /proc agree within one).
START_TIME_SLACK_S = 0.05
#: How long one round of a kill's freeze waits for the processes it stopped to be stopped (on a loaded
#: machine each must first be scheduled to take its SIGSTOP; one in uninterruptible sleep takes longer).
STOP_WAIT_S = 1.0


def same_start(a: float, b: float) -> bool:
    """True if two start times are the same process's, within `START_TIME_SLACK_S`."""
    return abs(a - b) <= START_TIME_SLACK_S


def process_alive(pid: int | None, started: float | None) -> bool:
    """True if the process with this pid *and* this start time lives (a zombie counts as gone)."""
    if not pid or started is None:
        return False
    stat = _proc_stat(int(pid))
    if stat is None:
        return find(int(pid), started) is not None
    state, ticks = stat
    if state in ("Z", "X"):
        return False
    return same_start(_boot_time() + ticks / os.sysconf("SC_CLK_TCK"), started)


def own_start_time() -> float:
    """This process's start time, read as `process_alive` reads it (from /proc where there is one)."""
    stat = _proc_stat(os.getpid())
    if stat is None:
        return start_time(os.getpid()) or time.time()
    return _boot_time() + stat[1] / os.sysconf("SC_CLK_TCK")


def start_time(pid: int) -> float | None:
    """The process's start time (seconds since the epoch), or None if it does not exist."""
    import psutil

    try:
        return psutil.Process(pid).create_time()
    except (psutil.Error, ValueError):
        return None


def find(pid: int | None, started: float | None) -> psutil.Process | None:
    """The live process with this pid *and* start time; None if it is gone, a zombie, or a stranger."""
    import psutil

    if not pid or started is None:
        return None
    try:
        proc = psutil.Process(pid)
        if not same_start(proc.create_time(), started):
            return None
        return None if proc.status() == psutil.STATUS_ZOMBIE else proc
    except psutil.Error:
        return None


def tree(pid: int) -> dict[int, psutil.Process]:
    """The process and all its descendants by pid; empty if it is gone."""
    import psutil

    try:
        root = psutil.Process(pid)
        return {p.pid: p for p in [root, *root.children(recursive=True)]}
    except psutil.Error:
        return {}


def trees(roots: Iterable[int]) -> dict[int, set[int]]:
    """Each root's pid with all its descendants' pids, from one pass over the process table (for many
    roots, cheaper than a `tree` each)."""
    import psutil

    children: dict[int, list[int]] = {}
    for proc in psutil.process_iter(["ppid"]):
        children.setdefault(proc.info["ppid"] or 0, []).append(proc.pid)
    found = {}
    for root in roots:
        pids, todo = {root}, [root]
        while todo:
            kids = children.get(todo.pop(), ())
            todo += [k for k in kids if k not in pids]
            pids.update(kids)
        found[root] = pids
    return found


def group(pgid: int, since: float, session: bool = False) -> list[psutil.Process]:
    """The processes of group `pgid` started since `since`; with `session`, also those of the session
    `pgid` leads (processes that made groups of their own stay in their session)."""
    import psutil

    found = []
    for proc in psutil.process_iter(["create_time"]):
        try:
            if proc.info["create_time"] < since - START_TIME_SLACK_S:
                continue
            if os.getpgid(proc.pid) == pgid or (session and os.getsid(proc.pid) == pgid):
                found.append(proc)
        except (OSError, psutil.Error):
            continue
    return found


def family(leader: psutil.Process | None, pgid: int | None, since: float) -> list[psutil.Process]:
    """The leader, all its descendants, and every process of its group, or of the session it leads,
    started since `since` (the leader's start); never the caller itself.

    A run starts as a session leader (pid = pgid = session id), and its session is the one thing every
    process it started keeps: Ray's raylet puts each worker in a group of its own, so a worker whose
    raylet is gone (reparented to init: no longer in the leader's tree) is found by its session alone.
    A group or session id stays taken while any member lives, so if the leader's pid now belongs to a
    process started at another time, they are someone else's and are left alone.
    """
    procs = tree(leader.pid) if leader is not None else {}
    if pgid:
        leader_started = start_time(pgid)
        if leader_started is None or same_start(leader_started, since):
            procs.update((p.pid, p) for p in group(pgid, since, session=True))
    procs.pop(os.getpid(), None)
    return list(procs.values())


def frozen_family(leader: psutil.Process | None, pgid: int | None, since: float,
                  rounds: int = 8) -> list[psutil.Process]:
    """`family`, each member stopped (SIGSTOP) as it is found, and looked for again until no new process
    shows: a process forked while the others were being found or signalled (a search's raylet starting
    a worker, on a loaded machine) is caught too, since a stopped parent neither exits nor forks."""
    import psutil

    found: dict[int, psutil.Process] = {}
    for _ in range(rounds):
        new = {p.pid: p for p in family(leader, pgid, since) if p.pid not in found}
        for proc in list(found.values()):  # children of stopped members, in a session of their own
            new.update((pid, p) for pid, p in tree(proc.pid).items() if pid not in found)
        new.pop(os.getpid(), None)
        if not new:
            break
        for proc in new.values():
            try:
                proc.send_signal(signal.SIGSTOP)
            except psutil.Error:
                pass
        wait_stopped(list(new.values()))
        found.update(new)
    return list(found.values())


@dataclass(frozen=True)
class Ending:
    """What `end_family` ended: every pid it found, and the processes that outlived their SIGKILL."""

    pids: list[int]
    survivors: list[psutil.Process]


def end_family(leader: psutil.Process | None, pgid: int | None, since: float,
               record: Callable[[list[int]], None] | None = None, self_last: bool = False) -> Ending:
    """The one way a run's processes end, for the CLI, the console, a watchdog and every place: the
    family found and frozen (`frozen_family`: none forks or exits meanwhile, no pid is reused), `record`
    told their pids while they are frozen (a watchdog's `killed` must come before its own process's
    threads can see a child die), then each SIGKILLed and waited for. With `self_last` the caller's own
    process is killed right after them, without a wait (a watchdog ending its run from inside)."""
    procs = frozen_family(leader, pgid, since)
    pids = [p.pid for p in procs]
    if record is not None:
        record(pids)
    if self_last:
        sys.setswitchinterval(1.0)  # no turn for the caller's other threads between the last kills
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)
    return Ending(pids, kill_all(procs))


def wait_stopped(procs: list[psutil.Process], timeout: float = STOP_WAIT_S) -> None:
    """Wait (at most `timeout`) until each process has stopped or is gone. A SIGSTOP is only pending until
    the process next runs: one in the middle of a fork finishes it first, so its new child shows only
    then, and looking again before would miss it (it would outlive the kill)."""
    import psutil

    halted = (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP, psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
    deadline = time.monotonic() + timeout
    while procs and time.monotonic() < deadline:
        procs = [p for p in procs if _status(p) not in halted]
        if procs:
            time.sleep(0.002)


def _status(proc: psutil.Process) -> str:
    import psutil

    try:
        return proc.status()
    except psutil.Error:
        return psutil.STATUS_DEAD


def kill_all(procs: list[psutil.Process], timeout: float = 3.0) -> list[psutil.Process]:
    """SIGKILL every process and wait until each is gone (a zombie counts as gone); return survivors."""
    import psutil

    for proc in procs:
        try:
            proc.send_signal(signal.SIGKILL)
        except psutil.Error:
            pass
    deadline = time.monotonic() + timeout
    alive = procs
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if running(p)]
        if alive:
            time.sleep(0.02)
    return alive


def running(proc: psutil.Process) -> bool:
    """True while the process exists and is not a zombie."""
    import psutil

    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _proc_stat(pid: int) -> tuple[str, int] | None:
    # /proc/PID/stat: "pid (comm) state ... starttime(22nd field)"; comm may hold spaces and parens.
    # None: no /proc here (macOS), ask psutil.
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read().decode(errors="replace")
    except (FileNotFoundError, ProcessLookupError):
        return ("X", 0) if os.path.isdir("/proc/self") else None
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()
    return fields[0], int(fields[19])


_BOOT_TIME: list[float] = []


def _boot_time() -> float:
    if not _BOOT_TIME:
        with open("/proc/stat") as f:
            _BOOT_TIME.append(next(float(line.split()[1]) for line in f if line.startswith("btime")))
    return _BOOT_TIME[0]
