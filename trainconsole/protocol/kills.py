"""The one record of a run's end that its own process could not write (stdlib only): a kill (the
console's `kill`, a run's watchdog, a place's kill) and a place's word on a run it ended (`settle`)."""

from __future__ import annotations

import time
from typing import Any

from .events import KILLED, RESERVE, EventWriter
from .rundir import RunDir


def record_end(run: RunDir, kind: str, **facts: Any) -> None:
    """Record that the run ended as `kind` (`killed`, or a place's `failed`): its final event with the
    facts, run.json's `ended_at`, and its disk ballast gone (only the run would have removed it). The
    caller holds the run's lock."""
    run_id = run.read_info().get("id") or run.id
    EventWriter(run.events, run_id).emit(kind, **facts)
    run.update_info(ended_at=time.time())
    drop_ballast(run)


def drop_ballast(run: RunDir) -> None:
    """Remove the run's disk ballast (the trainer's reserve against a full disk), which only the run
    itself removes otherwise: once its process is gone, it would hold the disk for nothing."""
    (run.path / RESERVE).unlink(missing_ok=True)


def record_kill(run: RunDir, pids: list[int], **facts: Any) -> None:
    """Record that the run was killed: its `killed` event (the pids ended, and what else the killer
    knows: its host, that it was asked), run.json's `ended_at`, its disk ballast gone."""
    record_end(run, KILLED, pids=sorted(pids), **facts)
