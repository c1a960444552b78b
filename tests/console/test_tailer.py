"""The tailer thread's reading, without the UI: growth, half lines, bad directories, vanished runs."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from conftest import FAILED, FINISHED, LOST, RUNNING, STOPPED, T0, write_run

from console.services.tailer import Tailer
from console.state import Board


def tailer(home: Path) -> tuple[Tailer, Board, list[int]]:
    board, calls = Board(), []
    return Tailer(home, board, lambda: calls.append(1)), board, calls


def line(run_id: str, **fields: object) -> bytes:
    return (json.dumps({"v": 1, "t": T0, "run": run_id, **fields}) + "\n").encode()


def test_first_pass_reads_every_run_and_its_status(fixture_home: Path) -> None:
    t, board, _ = tailer(fixture_home)
    changed, behind = t.poll_once()
    assert changed and not behind
    status = {rid: run.status for rid, run in board.runs.items()}
    assert status == {FINISHED: "finished", FAILED: "failed", RUNNING: "running", STOPPED: "stopped",
                      LOST: "lost"}
    assert len(board.runs[FINISHED].train_loss) == 100 and board.runs[FINISHED].epochs == 5
    assert "skipped 1 unreadable line" in board.runs[LOST].notes[-1].text


def test_reads_only_what_grew_and_waits_for_half_lines(tmp_path: Path) -> None:
    run = write_run(tmp_path, "r-0001", [{"t": T0, "type": "started"}])
    t, board, _ = tailer(tmp_path)
    t.poll_once()
    assert t.poll_once() == (False, False)  # nothing grew: one stat, no read
    whole = line("r-0001", type="step", step=1, loss=0.5)
    with open(run.events, "ab") as f:
        f.write(whole[:20])
    t.poll_once()
    assert len(board.runs["r-0001"].train_loss) == 0
    with open(run.events, "ab") as f:
        f.write(whole[20:])
    changed, _ = t.poll_once()
    assert changed and board.runs["r-0001"].loss == 0.5 and board.take_dirty() == {"r-0001"}


def test_unreadable_log_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    run = write_run(tmp_path, "r-0002", [])
    run.events.unlink()
    run.events.mkdir()  # reading it fails with IsADirectoryError, even as root
    t, board, _ = tailer(tmp_path)
    t.poll_once()
    assert "cannot read events.jsonl" in board.runs["r-0002"].problem
    assert board.runs["r-0002"].notes[-1].level == "error"


def test_vanished_and_replaced_runs(tmp_path: Path) -> None:
    gone = write_run(tmp_path, "r-0003", [{"t": T0, "type": "started"}])
    kept = write_run(tmp_path, "r-0004", [{"t": T0, "type": "step", "step": 5, "loss": 1.0}])
    t, board, _ = tailer(tmp_path)
    t.poll_once()
    shutil.rmtree(gone.path)
    kept.events.write_bytes(line("r-0004", type="step", step=1, loss=2))  # rewritten, shorter
    t.poke()
    t.poll_once()
    assert "r-0003" not in board.runs
    assert board.runs["r-0004"].loss == 2.0 and len(board.runs["r-0004"].train_loss) == 1


def test_thread_notifies_and_stops(tmp_path: Path) -> None:
    run = write_run(tmp_path, "r-0005", [{"t": T0, "type": "started"}])
    t, board, calls = tailer(tmp_path)
    t.start()
    assert t.loaded.wait(5)
    with open(run.events, "ab") as f:
        f.write(line("r-0005", type="step", step=1, loss=0.25))
    for _ in range(100):
        with t.lock:
            if board.runs["r-0005"].loss == 0.25:
                break
        time.sleep(0.02)
    t.stop()
    assert board.runs["r-0005"].loss == 0.25 and calls
    assert not t._thread.is_alive()


def test_an_unexpected_error_is_reported_and_the_thread_goes_on(tmp_path: Path) -> None:
    write_run(tmp_path, "r-0006", [{"t": T0, "type": "started"}])
    board, errors = Board(), []
    t = Tailer(tmp_path, board, lambda: None, on_error=errors.append)
    real, calls = t.poll_once, []

    def flaky() -> tuple[bool, bool]:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("boom")
        return real()

    t.poll_once = flaky  # type: ignore[method-assign]
    t.start()
    assert t.loaded.wait(5)
    t.stop()
    assert errors and "boom" in errors[0] and "r-0006" in board.runs
