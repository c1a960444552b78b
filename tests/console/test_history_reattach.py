"""Reattach from a history (issue 47): the tailer's first console over a long log replays it and keeps its
history beside it; the next console's first message carries the whole history (row and plot) at once,
and shows what the replay showed. The tests play the app's part, as test_tailer.py does."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from trainconsole.console.core import snapshot
from trainconsole.console.core.board import Board, row
from trainconsole.console.core.plot import plot_lines
from trainconsole.console.services import run_history
from trainconsole.console.services.tailer import RunsRead, Tailer
from trainconsole.protocol import RunDir

T0 = 1_700_000_000.0
RUN = "20240101-000000-long-0001"
STEPS = 3000


class App:
    def __init__(self, home: Path) -> None:
        self.board, self.messages = Board(), []
        self.tailer = Tailer(home, self.post, hold=0.0)

    def post(self, message: RunsRead) -> None:
        self.messages.append(message)
        for update in message.updates.values():
            self.board.take(update)
        self.tailer.taken()

    def until_loaded(self) -> None:
        for _ in range(200):
            self.tailer.poll_once()
            if self.tailer.loaded.is_set():
                return
        raise AssertionError("never loaded")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A finished run with a long log (histories from 64 KiB on, keeping what plots up to 8 wide read)."""
    monkeypatch.setattr(run_history, "FROM_BYTES", 64 << 10)
    monkeypatch.setattr(snapshot, "RAW_MAX", 32)
    run = RunDir(tmp_path / "runs" / RUN)
    run.path.mkdir(parents=True)
    events = [{"type": "started", "strategy": "single", "devices": ["cpu"]}]
    for s in range(1, STEPS + 1):
        events.append({"type": "step", "step": s, "epoch": 1 + (s - 1) // 1000, "loss": 2 / (1 + s / 300),
                       "samples_per_s": 100.0 + s % 7, "count": 10})
        if s % 1000 == 0:
            events.append({"type": "eval", "epoch": s // 1000, "step": s, "val_loss": 0.3, "val_acc": 0.9})
    events.append({"type": "finished", "best_val_acc": 0.9})
    with open(run.events, "w") as f:
        f.writelines(json.dumps({"v": 1, "t": T0 + i, "run": RUN, **e}) + "\n" for i, e in enumerate(events))
    run.write_info({"id": RUN, "name": "long", "kind": "train", "strategy": "single", "pid": None,
                    "started_at": T0, "ended_at": T0 + len(events)})
    return tmp_path


def shown(board: Board) -> tuple:
    run = board.runs[RUN]
    return row(run, T0 + 99_999), [plot_lines([run], width) for width in (1, 3, 8)], list(run.notes)


def test_the_next_console_shows_the_whole_history_in_its_first_message(home: Path) -> None:
    first = App(home)
    first.until_loaded()
    assert os.path.exists(home / "runs" / RUN / "history.json")  # kept by the console that replayed it
    second = App(home)
    second.tailer.poll_once()  # one pass: the row and the whole plot
    assert len(second.messages) == 1 and len(second.board.runs[RUN].train_loss) == STEPS
    assert second.tailer.loaded.is_set()  # nothing left to read in the background
    assert shown(second.board) == shown(first.board)


def test_a_garbled_history_costs_a_replay_never_a_false_figure(home: Path) -> None:
    App(home).until_loaded()
    path = home / "runs" / RUN / "history.json"
    raw = path.read_bytes()
    path.write_bytes(raw.replace(b'"best_val_acc":0.9', b'"best_val_acc":0.1'))  # still JSON
    truth = App(home)
    truth.tailer.poll_once()
    assert len(truth.board.runs[RUN].train_loss) < STEPS  # its tail first: the log is replayed
    truth.until_loaded()
    assert truth.board.runs[RUN].best_val_acc == 0.9
    assert len(truth.board.runs[RUN].train_loss) == STEPS


def test_a_console_that_followed_a_long_run_to_its_end_keeps_its_history(home: Path) -> None:
    log = home / "runs" / RUN / "events.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[:50]))  # the run as it began: the console follows it from its start
    first = App(home)
    first.until_loaded()
    with open(log, "ab") as f:  # it goes on, and ends
        for i in range(50, len(lines), 400):
            f.writelines(lines[i:i + 400])
            f.flush()
            first.tailer.poll_once()
    first.tailer.poll_once()  # (the app has applied the final event: kept)
    assert first.board.runs[RUN].status == "finished"
    assert os.path.exists(home / "runs" / RUN / "history.json")
    second = App(home)
    second.tailer.poll_once()  # one pass: the row and the whole plot, from the history
    assert len(second.messages) == 1 and len(second.board.runs[RUN].train_loss) == STEPS
    assert second.tailer.loaded.is_set()
    assert shown(second.board) == shown(first.board)


def test_a_short_run_or_one_that_goes_on_after_its_final_event_is_not_kept(home: Path) -> None:
    log = home / "runs" / RUN / "events.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[:50]))
    first = App(home)
    first.until_loaded()
    with open(log, "ab") as f:  # ended, then resumed at once (before the console came back to it)
        f.writelines(lines[50:])
        f.flush()
        first.tailer.poll_once()
        f.write(lines[0])  # (a `started` again)
    first.tailer.poll_once()
    first.tailer.poll_once()
    assert not os.path.exists(home / "runs" / RUN / "history.json")
    log.write_bytes(b"".join(lines[:50]))  # a short log that ends is never kept
    small = App(home)
    small.until_loaded()
    with open(log, "ab") as f:
        f.write(lines[-1])
    small.tailer.poll_once()
    small.tailer.poll_once()
    assert small.board.runs[RUN].status == "finished"
    assert not os.path.exists(home / "runs" / RUN / "history.json")
