"""A summarized run's history is asked for before the dashboard's first frame (issue 47): the run the first
frame will select has its log read while the dashboard's first paint is still going on, not once that
frame is drawn. Here the frame is never drawn (the panes are never drawable, as during that paint)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from conftest import FAILED, RUNNING, make_app, until

from trainconsole.console.screens import frames
from trainconsole.protocol import index
from trainconsole.protocol.status import run_status


async def test_the_first_selected_runs_history_is_read_before_its_frame(
        fixture_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.rmtree(fixture_home / "runs" / RUNNING)  # (the newest left, FAILED, has ended: summarized)
    time.sleep(index.SETTLE_S + 0.5)  # a summary is kept once its run's files are still
    index.summaries(fixture_home, run_status)
    monkeypatch.setattr(frames.Frames, "_drawable", lambda self: None)
    app = make_app(fixture_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: FAILED in app.board.runs, 20, "the row from the index")
        await until(pilot, lambda: not app.board.runs[FAILED].summarized, 20, "its log asked for")
        await until(pilot, lambda: len(app.board.runs[FAILED].train_loss) > 0, 20, "its history")
        assert app.main.frames.keys_for is None  # (no frame drawn)
        assert app.board.runs[FAILED].final == "failed"
