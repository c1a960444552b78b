"""Helpers every test folder shares: wait for a condition, and tell whether processes are gone."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import psutil


def wait_for(predicate: Callable[[], Any], timeout: float = 90.0, what: str = "condition") -> Any:
    """Poll until `predicate()` is truthy; return its value (an AssertionError naming `what` if never).
    A costly check (a CLI process, a Ray driver) waits twice its own time before the next: on two cores,
    back-to-back checks took a core from the very runs they wait for."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        began = time.monotonic()
        value = predicate()
        if value:
            return value
        time.sleep(max(0.05, min(2 * (time.monotonic() - began), 1.0)))
    raise AssertionError(f"timed out waiting for {what}")


def gone(pids: list[int]) -> bool:
    """None of the pids runs (a zombie counts as gone: PID 1 reaps orphans here only ~2 s later)."""
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                return False
        except psutil.NoSuchProcess:
            continue
    return True
