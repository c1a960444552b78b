"""The console's status of a Slurm run is `ls`'s: its place's word on a final event (`Place.final_status`),
without a cluster: squeue's answer is the view the Slurm queue keeps on disk for every reader."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from test_tailer import tailer

from trainconsole.console.core.board import build_view, slurm_job
from trainconsole.protocol import RunDir, run_status
from trainconsole.protocol.places import slurm, slurm_queue
from trainconsole.protocol.places.slurm_queue import ENV_POLL, HOLDERS_FORMAT, Scheduler, _view_path

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


SQUEUE = """#!/bin/sh
echo "$@" >> "{calls}"
printf '12|sleep|alice|n1|9:58\\n13|train|bob|n2|1:02:00\\n'
"""


def test_a_queued_runs_log_pane_names_the_jobs_that_hold_its_nodes(home: Path, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLURM_CONF", raising=False)
    monkeypatch.setenv(ENV_POLL, "3600")
    bin_dir, calls = tmp_path / "bin", tmp_path / "squeue-calls"
    bin_dir.mkdir()
    (bin_dir / "squeue").write_text(SQUEUE.format(calls=calls))  # squeue's answer for the holders
    (bin_dir / "squeue").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setattr(slurm_queue, "HOLDERS", slurm_queue.Holders())
    monkeypatch.setattr(slurm, "HOLDERS", slurm_queue.HOLDERS)
    home.mkdir(parents=True)
    now = time.time()
    info = {"id": RUN, "kind": "train", "queued": True, "started_at": now - 5,
            "slurm": {"job_id": "7", "submitted_at": now - 5, "partition": "debug", "time": "10"}}
    write(home / "runs" / RUN, info, [])
    write(home / "runs" / "r-local-0001", {"id": "r-local-0001", "kind": "train", "started_at": now - 5},
          [{"t": now - 4, "type": "started"}, {"t": now - 1, "type": "finished"}])  # no Slurm asked for it
    squeue_says(monkeypatch, "PENDING", "Resources")
    t, board, _ = tailer(home)
    for _ in range(3):
        t.poke()
        t.poll_once()
    assert board.runs[RUN].status == "queued"
    log = build_view(board, time.time(), RUN, [], "newest", {"*"}).log
    assert log is not None and [n.text for n in log.notes][-2:] == [
        "its nodes held by job 12 sleep (alice, n1, 9:58 left)",
        "its nodes held by job 13 train (bob, n2, 1:02:00 left)"]
    assert calls.read_text().splitlines() == [f"-h -t RUNNING,COMPLETING -p debug -o {HOLDERS_FORMAT}"]

    squeue_says(monkeypatch, "RUNNING")  # it runs: nothing holds it
    t.poke()
    t.poll_once()
    log = build_view(board, time.time(), RUN, [], "newest", {"*"}).log
    assert log is not None and not any(n.text.startswith("its nodes held") for n in log.notes)
