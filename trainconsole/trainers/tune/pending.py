"""A search whose trials wait with nothing running: noticed, said, and ended so that it can go on.

Ray Tune never gives up on a trial it cannot place: when no trial runs and the cluster cannot (or no
longer) grant what a pending trial asks for (resources Ray still counts as held by an actor that is
gone, a node lost, a cluster smaller than asked), Tune's loop goes on waiting for ever, logging at most a
line to the driver's stderr. A fresh Ray and the saved search (`resume`) start such trials again.

`PendingWatch`, a Tune callback run at every step of Tune's loop, sees trials pending with none running
(or paused) for `limit_s()` seconds: it writes a `warning` event (`trials_stuck`, with what Ray holds
and has free) and interrupts the search the way a stop does, so that Tune saves it. The driver then
starts a fresh Ray and restores the search (once); stuck again, the search ends `stopped`, its pending
trials with it, and `trainconsole resume ID` continues it.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

from ray import tune

from trainconsole.protocol import EventWriter

#: Seconds trials may wait with nothing running before the search is said to be stuck (on a cluster
#: longer: its autoscaler may be adding the nodes they wait for).
ENV_LIMIT = "TRAINCONSOLE_TUNE_STUCK_S"
DEFAULT_LIMIT_S = 120.0
CLUSTER_LIMIT_S = 600.0
#: How many times a stuck search is restarted on a fresh Ray before it ends.
RESTARTS = 1

STUCK = threading.Event()  # set by the watch in the driver's process; read by the driver after fit()


def limit_s(cluster: bool = False) -> float:
    """The limit: `TRAINCONSOLE_TUNE_STUCK_S` if it is a number > 0, else 120 s (600 s on a cluster)."""
    default = CLUSTER_LIMIT_S if cluster else DEFAULT_LIMIT_S
    try:
        value = float(os.environ.get(ENV_LIMIT, ""))
    except ValueError:
        return default
    return value if value > 0 else default


class PendingWatch(tune.Callback):
    """Interrupts the search once trials have been pending, with none running, for `limit_s()`."""

    def __init__(self, run_dir: Path, run_id: str, cluster: bool = False) -> None:
        self.run_dir, self.run_id, self.cluster = run_dir, run_id, cluster
        self._since: float | None = None  # when the wait began (monotonic; not kept across a restore)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_since": None}

    def on_step_end(self, iteration: int, trials: list[Any], **info: Any) -> None:
        pending = [t for t in trials if t.status == "PENDING"]
        if not pending or any(t.status in ("RUNNING", "PAUSED") for t in trials) or STUCK.is_set():
            self._since = None
            return
        now = time.monotonic()
        if self._since is None:
            self._since = now
        elif now - self._since >= limit_s(self.cluster):
            STUCK.set()
            self.say(len(pending), now - self._since)
            interrupt()

    def say(self, pending: int, waited: float) -> None:
        """The `warning` event: how many trials wait, for how long, and Ray's view of its resources."""
        EventWriter(self.run_dir / "events.jsonl", self.run_id).emit(
            "warning", code="trials_stuck", pending=pending, waited_s=round(waited, 1), ray=resources(),
            message=f"{pending} trial(s) pending with nothing running for {waited:.0f} s",
            hint="the search is saved and restarted on a fresh Ray once; if it is stuck again it ends "
                 "stopped, and `trainconsole resume ID` continues it")


def resources() -> dict[str, Any]:
    """CPU and GPU: Ray's total and what it has free (free below what a trial asks: held by something)."""
    try:
        import ray

        total, free = ray.cluster_resources(), ray.available_resources()
    except Exception:  # noqa: BLE001 - only context for the warning
        return {}
    return {k: {"total": total.get(k, 0), "free": free.get(k, 0)} for k in ("CPU", "GPU") if k in total}


def interrupt() -> None:
    """Ask Tune to end its loop and save the search, as a SIGTERM does (Tune's SIGUSR1 handler)."""
    handler = signal.getsignal(signal.SIGUSR1)
    if callable(handler):
        handler(signal.SIGUSR1, None)


def clear() -> None:
    """Forget a stuck search (before it is restarted)."""
    STUCK.clear()


def stuck() -> bool:
    """True once the watch has interrupted the search."""
    return STUCK.is_set()
