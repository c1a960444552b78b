"""The plot's pace (issue 47): a run's whole state handed over (a history read, a backfill caught up) is
plotted at the next frame, not once the plot's pace (`frames.PLOT_S`) allows; new events of the same
state still wait for it. The pace is made an hour here, so only the hand-over can redraw the plot."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from conftest import RUNNING, T0, make_app, until

from trainconsole.console.core.run_state import RunState
from trainconsole.console.screens import frames
from trainconsole.console.widgets.loss_plot import LossPlot
from trainconsole.protocol import read_all


def train_xs(plot: LossPlot) -> list[float]:
    return next((line.xs for line in plot.lines if line.run_id == RUNNING and line.kind == "train"), [])


def step(s: int) -> dict:
    return {"v": 1, "run": RUNNING, "t": T0 + 7000 + s, "type": "step", "step": s, "epoch": 10, "loss": 0.01}


async def test_a_handed_over_state_is_plotted_at_the_next_frame_new_events_at_the_plots_pace(
        fixture_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(frames, "PLOT_S", 3600.0)
    app = make_app(fixture_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.dashboard and app.main.query_one(LossPlot), 20, "the dashboard")
        plot = app.main.query_one(LossPlot)
        await until(pilot, lambda: app.loaded and max(train_xs(plot), default=0) == 400, 20, "the first plot")
        app.tailer.stop()  # (the test hands the states over, as the reader would)
        await pilot.pause(0.2)
        drawn = app.main.frames._plot_next
        state = RunState(RUNNING)  # the run's whole state, read again, and a step more
        for event in [*read_all(fixture_home / "runs" / RUNNING / "events.jsonl"), step(450)]:
            state.apply(event)
        app.board.runs[RUNNING] = state
        app.board.touch(RUNNING)
        app.main.frames.schedule()
        await until(pilot, lambda: max(train_xs(plot)) == 450, 20, "the handed-over state plotted")
        assert app.main.frames._plot_next > drawn  # (a plot drawn, not waited for)
        app.board.apply(RUNNING, [step(460)])  # the same state, a new event: the plot's pace
        app.main.frames.schedule()
        table_drawn = app.main.frames._last_frame
        await until(pilot, lambda: app.main.frames._last_frame > table_drawn, 20, "the next frame")
        await asyncio.sleep(0.3)
        await pilot.pause()
        assert max(train_xs(plot)) == 450
