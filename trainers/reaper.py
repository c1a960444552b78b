"""Leaving no process behind: ranks die with their launcher, and the launcher kills what is left of them.

A rank's DataLoader workers are the rank's children; when a rank dies they are re-parented and are no
longer anyone's descendants, so the launcher also sweeps its process group when it leads one (runs are
started with `start_new_session`, so the group is exactly the run). Stdlib and psutil only.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time
from typing import Any

import psutil

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
    for child in _family(os.getpid()).values():
        if child.pid != os.getpid():
            try:
                child.send_signal(signal.SIGKILL)
            except psutil.Error:
                pass
    os._exit(code)


def kill_ranks(procs: list[Any], since: float) -> None:
    """SIGKILL the live ranks, their descendants and whatever else joined this launcher's group after
    `since` (the ranks' start); then reap the ranks."""
    victims: dict[int, psutil.Process] = {}
    for proc in procs:
        if proc.pid is not None and proc.exitcode is None:
            victims.update(_family(proc.pid))
    victims.update((p.pid, p) for p in _group_members(since))
    victims.pop(os.getpid(), None)
    for victim in victims.values():
        try:
            victim.send_signal(signal.SIGKILL)
        except psutil.Error:
            pass
    deadline = time.monotonic() + GONE_WAIT_S
    while time.monotonic() < deadline and any(_alive(v) for v in victims.values()):
        time.sleep(0.02)
    for proc in procs:
        if proc.pid is not None:
            proc.join(timeout=1.0)


def _family(pid: int) -> dict[int, psutil.Process]:
    try:
        root = psutil.Process(pid)
        return {p.pid: p for p in [root, *root.children(recursive=True)]}
    except psutil.Error:
        return {}


def _group_members(since: float) -> list[psutil.Process]:
    """Processes of our group started since `since`, only when we lead it (else the group is not ours)."""
    me = os.getpid()
    if os.getpgrp() != me:
        return []
    found = []
    for proc in psutil.process_iter(["create_time"]):
        try:
            if proc.pid != me and os.getpgid(proc.pid) == me and proc.info["create_time"] >= since - 0.05:
                found.append(proc)
        except (OSError, psutil.Error):
            continue
    return found


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
