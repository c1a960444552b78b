"""The console's status of a Slurm run is `ls`'s: its place's word on a final event (`Place.final_status`),
without a cluster: squeue's answer is the view the Slurm queue keeps on disk for every reader."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from test_tailer import tailer

from trainconsole.console.core.board import slurm_job
from trainconsole.protocol import RunDir, run_status
from trainconsole.protocol.places import slurm
from trainconsole.protocol.places.slurm_queue import ENV_POLL, Scheduler, _view_path

RUN = "r-slurm-0001"


def squeue_says(monkeypatch: pytest.MonkeyPatch, state: str, reason: str = "None") -> None:
    """squeue's last answer as every reader keeps it (`%i|%T|%r|%N|%P|%l|%L`), fresh, read afresh."""
    job = ["7", state, reason, "n[1-2]" if state == "RUNNING" else "", "debug", "10:00",
           "9:12" if state == "RUNNING" else "10:00"]
    _view_path().write_text(json.dumps({"at": time.time(), "unreachable_since": None, "jobs": {"7": job}}))
    monkeypatch.setattr(slurm, "SCHEDULER", Scheduler())


def write(path: Path, info: dict, events: list[dict]) -> None:
    path.mkdir(parents=True, exist_ok=True)
    (path / "run.json").write_text(json.dumps(info))
    (path / "events.jsonl").write_text("".join(json.dumps({"v": 1, "run": RUN, **e}) + "\n" for e in events))


def test_slurms_own_term_never_shows_stopped_in_the_console(home: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLURM_CONF", raising=False)
    monkeypatch.setenv(ENV_POLL, "3600")  # the view on disk is the answer: no squeue is asked
    home.mkdir(parents=True)
    now = time.time()
    path = home / "runs" / RUN
    info = {"id": RUN, "kind": "train", "started_at": now - 30, "host": "elsewhere",
            "slurm": {"job_id": "7", "submitted_at": now - 40, "partition": "debug", "time": "10"}}
    started = {"t": now - 29, "type": "started"}
    write(path, info, [started])
    squeue_says(monkeypatch, "RUNNING")
    t, board, _ = tailer(home)
    t.poll_once()
    assert board.runs[RUN].status == "running"
    with (path / "events.jsonl").open("a") as log:  # Slurm's TERM (an outside requeue, a time limit)
        log.write(json.dumps({"v": 1, "run": RUN, "t": now, "type": "stopped"}) + "\n")
    seen = []
    for _ in range(3):
        t.poll_once()
        seen.append(board.runs[RUN].status)
    assert seen == ["running"] * 3 == [run_status(RunDir(path))] * 3  # what `ls` shows, never `stopped`
    title = slurm_job(board.runs[RUN].slurm_job)  # the log pane's: the job with squeue's time left
    assert title == " · Slurm job 7, debug, n[1-2], limit 10:00, 9:12 left"
    assert "live" not in RunDir(path).read_info()["slurm"]  # (the reader's, not run.json's)

    write(path, {**info, "ended_at": now + 1}, [started, {"t": now, "type": "stopped"}])
    squeue_says(monkeypatch, "PENDING", "BeginTime")  # requeued: it waits again
    t.poke()
    t.poll_once()
    assert board.runs[RUN].status == "queued" == run_status(RunDir(path))
    assert slurm_job(board.runs[RUN].slurm_job) == " · Slurm job 7, debug, limit 10:00"  # no time left yet

    ours = {**info, "ended_at": now + 1, "slurm": {**info["slurm"], "stop_asked_at": now - 1}}
    write(path, ours, [started, {"t": now, "type": "stopped"}])  # a stop of ours is one
    t.poke()
    t.poll_once()
    assert board.runs[RUN].status == "stopped" == run_status(RunDir(path))
