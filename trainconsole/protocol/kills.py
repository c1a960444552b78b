"""The one record of a kill (stdlib only): what the console's `kill` and a run's watchdog both write."""

from __future__ import annotations

import time
from typing import Any

from .events import KILLED, RESERVE, EventWriter
from .rundir import RunDir


def record_kill(run: RunDir, pids: list[int], **facts: Any) -> None:
    """Record that the run was killed: its `killed` event (the pids ended, and what else the killer
    knows: its host, that it was asked), run.json's `ended_at`, and its disk ballast gone (only the run
    would have removed it). The caller holds the run's lock."""
    run_id = run.read_info().get("id") or run.id
    EventWriter(run.events, run_id).emit(KILLED, pids=sorted(pids), **facts)
    run.update_info(ended_at=time.time())
    (run.path / RESERVE).unlink(missing_ok=True)
