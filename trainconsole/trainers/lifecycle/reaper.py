"""Leaving no process behind: ranks die with their launcher, and the launcher kills what is left of them.

A rank's DataLoader workers are the rank's children; when a rank dies they are re-parented and are no
longer anyone's descendants, so the launcher also sweeps its process group when it leads one (runs are
started with `start_new_session`, so the group is exactly the run).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from typing import Any

from trainconsole.protocol import processes

PR_SET_PDEATHSIG = 1
GONE_WAIT_S = 3.0


def die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent dies (no orphaned ranks); a no-op elsewhere."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def exit_now(code: int) -> None:
    """Flush stdio, SIGKILL this process's own children (DataLoader workers) and `os._exit(code)`.

    Skips interpreter teardown, which takes over a second once DDP has imported torch._dynamo, and which
    can hang in collective clean-up when a peer is already gone.
    """
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    children = processes.tree(os.getpid())
    children.pop(os.getpid(), None)
    processes.kill_all(list(children.values()), timeout=0)
    os._exit(code)


def kill_ranks(procs: list[Any], since: float) -> None:
    """SIGKILL the live ranks, their descendants and whatever else joined this launcher's group after
    `since` (the ranks' start); then reap the ranks."""
    victims = {}
    for proc in procs:
        if proc.pid is not None and proc.exitcode is None:
            victims.update(processes.tree(proc.pid))
    me = os.getpid()
    if os.getpgrp() == me:  # only a group we lead is ours to sweep
        victims.update((p.pid, p) for p in processes.group(me, since))
    victims.pop(me, None)
    processes.kill_all(list(victims.values()), timeout=GONE_WAIT_S)
    for proc in procs:
        if proc.pid is not None:
            proc.join(timeout=1.0)
