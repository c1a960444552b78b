"""One truth for a run's state (stdlib only).

The CLI, `ls`, the console and the lifecycle guards (launch, resume, stop, kill) all ask `run_status`;
`run.json` records facts (pid, start times, ended_at), never a status of its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import places
from .events import FINAL, STARTED, Event, tail

if TYPE_CHECKING:
    from .rundir import RunDir

#: How much earlier than run.json's `started_at` a `started` may be stamped and still be this launch's.
LAUNCH_SLACK_S = 0.01


class RunBusy(Exception):
    """A lifecycle operation met a run whose process is alive (or starting), here or on `host`."""

    def __init__(self, run_id: str, host: str | None = None) -> None:
        super().__init__(f"run {run_id} is running on {host}" if host else f"run {run_id} is already running")
        self.run_id, self.host = run_id, host


def derive_status(final: str | None, final_t: float, started_at: float | None, alive: bool | None,
                  queued: bool = False) -> str:
    """The status from the facts: the last final event (kind and time) since the last `started`, the
    time the current process was launched (run.json's `started_at`), whether that process is alive
    (None: not known yet), and whether the run waits in the queue.

    A final event counts unless the run was launched again after it (a resume); a run with no final
    event since its launch is running while its process lives, and lost once it has vanished.
    """
    relaunched = started_at is not None and started_at > final_t
    if final is not None and not relaunched:
        return final
    if queued:
        return "lost" if alive is False else "queued"
    return "lost" if alive is False else "running"


def last_final(events: list[Event]) -> tuple[str | None, float]:
    """The status given by the newest final event since the newest `started` (None if none), and its time."""
    for event in reversed(events):
        kind = event.get("type")
        if kind in FINAL:
            t = event.get("t")
            return FINAL[kind], float(t) if isinstance(t, (int, float)) else 0.0
        if kind == STARTED:
            break
    return None, 0.0


def run_status(run: RunDir, events: list[Event] | None = None, info: dict[str, Any] | None = None) -> str:
    """running, finished, failed, stopped, killed, lost or queued: the one status of a run."""
    events = tail(run.events) if events is None else events
    info = run.read_info() if info is None else info
    final, final_t = last_final(events)
    place = places.of(info)
    alive = place.alive(run.path, info)  # pid and start time here, the heartbeat from another host
    if place.late_word_s and (alive is False and final is None or final == "stopped" and place.watched(info)):
        final, final_t = last_final(tail(run.events))  # a place that writes how a run ended (Slurm's
        # word) may just have, as it was asked
    if final is not None:  # a `stopped` its place has yet to explain (Slurm's TERM) is not one yet
        final = place.final_status(info, final)
    launched = info.get("started_at") or 0.0  # a `started` from before a resume says nothing of this launch
    queued = in_queue(info, started=any(e.get("type") == STARTED and started_since(e.get("t") or 0, launched)
                                        for e in events))
    return derive_status(final, final_t, info.get("started_at"), alive, queued)


def started_since(started_t: float | None, launched: float | None) -> bool:
    """Whether a `started` written at `started_t` came from the process launched at `launched` (run.json's
    `started_at`), not from one before a resume; either unknown (None): it did. LAUNCH_SLACK_S: the run
    stamps its `started` to the millisecond, run.json's start is the launcher's clock read a moment apart."""
    return started_t is None or launched is None or started_t >= launched - LAUNCH_SLACK_S


def in_queue(info: dict[str, Any], started: bool = False) -> bool:
    """The one rule for `queued`: launched through the queue waiter (run.json `queued`), not yet handed to
    its command (`dequeued_at`, which the waiter records just before it does), and no `started` in its
    log (`started`). Facts of run.json first, so right for a run of any length, whatever part of its log
    a reader holds; `ls`, the console's rows and the waiters all ask it."""
    return bool(info.get("queued")) and not info.get("dequeued_at") and not started
