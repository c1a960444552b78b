"""The frame scheduler through its own timers: no test here calls `draw_frame` or `draw_plot`; events
appended to a live run's log reach the runs table and the plot by the app's timers alone."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import RUNNING, T0, make_app, until

from trainconsole.console.widgets.loss_plot import LossPlot
from trainconsole.console.widgets.runs_table import RunsTable


def append(home: Path, *events: dict) -> None:
    with open(home / "runs" / RUNNING / "events.jsonl", "a") as f:
        f.writelines(json.dumps({"v": 1, "run": RUNNING, **e}) + "\n" for e in events)


def train_xs(plot: LossPlot) -> list[float]:
    return next((line.xs for line in plot.lines if line.run_id == RUNNING and line.kind == "train"), [])


async def test_new_events_reach_the_table_and_the_plot_by_the_apps_timers(fixture_home: Path) -> None:
    app = make_app(fixture_home)
    async with app.run_test(size=(120, 40)) as pilot:
        table = await until(pilot, lambda: app.dashboard and app.main.query_one(RunsTable), 20,
                            "the dashboard")
        await until(pilot, lambda: RUNNING in table._cells, 20, "the first frame's rows")
        plot = app.main.query_one(LossPlot)
        await until(pilot, lambda: train_xs(plot), 20, "the first plot")  # (the running run is selected)
        assert table.selected_id == RUNNING and max(train_xs(plot)) == 400
        append(fixture_home, {"t": T0 + 7300, "type": "step", "step": 450, "epoch": 10, "loss": 0.0123},
               {"t": T0 + 7301, "type": "eval", "epoch": 10, "step": 450, "val_loss": 0.02,
                "val_acc": 0.9876})
        cells = await until(pilot, lambda: table._cells[RUNNING][5] == "0.988" and table._cells[RUNNING], 20,
                            "the new accuracy in the table")
        assert cells[3] == "10/10" and cells[4] == "0.0123"
        await until(pilot, lambda: max(train_xs(plot)) == 450, 20, "the new step on the plot")
