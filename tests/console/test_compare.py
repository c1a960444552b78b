"""The compare view (c): snapshots from fixed runs, and a pilot over two real digits runs that ends in a
third run started from the comparison; `trainconsole compare --json` gives the same facts.

Update the snapshots after a deliberate change with: pytest tests/console/test_compare.py --snapshot-update
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, T0, after, make_app, settle, training, until, write_run
from textual.widgets import DataTable, Input

from trainconsole import protocol
from trainconsole.console.app import TrainConsole
from trainconsole.console.core.board import duration, human_bytes
from trainconsole.console.screens.compare_screen import CompareScreen
from trainconsole.console.services.gpu import SimulatedGpus
from trainconsole.console.widgets.loss_plot import LossPlot

NARROW, WIDE = (80, 24), (120, 40)
A, B = "20240305-101500-small-cnn-digits-aaaa", "20240305-111500-small-cnn-digits-bbbb"


def compare_home(home: Path) -> Path:
    """Two finished runs that differ in train.lr and train.batch_size, each with its cost record."""
    for run_id, t0, lr, batch, scale, cost in (
            (A, T0, 0.05, 64, 1.0, {"wall_s": 51.0, "host_peak": 905 << 20, "gpu_peak": {"0": 3 << 30},
                                    "gpu_hours": 0.0142, "energy_j": 9120.0}),
            (B, T0 + 3600, 0.2, 128, 1.3, {"wall_s": 38.5, "host_peak": 871 << 20, "gpu_peak": {},
                                           "gpu_hours": None, "energy_j": None})):
        events = training(t0, 500, 5, scale=scale)
        events.append({"t": t0 + 51, "type": "finished", "best_val_acc": events[-2]["val_acc"], "cost": cost})
        run = write_run(home, run_id, events)
        config = protocol.config.read(run.config)
        config["train"]["lr"], config["train"]["batch_size"] = lr, batch
        run.config.write_text(protocol.dumps(config))
    return home


@pytest.fixture
def home_of_two(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("TRAINCONSOLE_HOME", str(home))
    return compare_home(home)


MARK_BOTH_AND_COMPARE = ("space", "down", "space", "c")


class TestSnapshots:
    def test_wide(self, snap_compare, home_of_two: Path) -> None:
        """Both runs' results and cost, the two keys that differ, their curves in two colours."""
        app = make_app(home_of_two)
        assert snap_compare(app, terminal_size=WIDE, run_before=after(*MARK_BOTH_AND_COMPARE))

    def test_narrow_all_keys_on_wall_time(self, snap_compare, home_of_two: Path) -> None:
        """80x24: a toggles every key (the differing ones bold), x puts the curves on wall time."""
        app = make_app(home_of_two)
        assert snap_compare(app, terminal_size=NARROW, run_before=after(*MARK_BOTH_AND_COMPARE, "a", "x"))


def trainconsole(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {"TRAINCONSOLE_HOME": str(home), "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-m", "trainconsole.console", *args], capture_output=True,
                          text=True,
                          cwd=REPO, env=env, timeout=300)


@pytest.mark.slow
async def test_two_real_runs_compared_then_a_third_started_from_the_view(home: Path) -> None:
    """Two finished digits runs differing only in lr and batch size: the view lists exactly those keys,
    both runs' best val_acc, wall time and peak memory; e, an edit, then l start a third run whose config
    is the chosen run's with the edit; `compare --json` says the same."""
    ids = []
    for lr, batch in (("0.05", "64"), ("0.1", "32")):
        sets = ["--set", "train.epochs=2", "--set", f"train.lr={lr}", "--set", f"train.batch_size={batch}"]
        done = trainconsole("run", "examples/digits.toml", *sets, "--wait", home=home)
        assert done.returncode == 0, done.stderr
        ids.append(done.stdout.split()[0])
    app = TrainConsole(home=home, sampler=SimulatedGpus(0), config_path=Path("examples/digits.toml"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("space", "down", "space", "c")
        screen = await until(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen, 10, "view")
        assert screen.comparison.differs == ["train.batch_size", "train.lr"]
        table = screen.query_one(DataTable)
        names = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
        assert names[-2:] == ["train.batch_size", "train.lr"] and "model.name" not in names  # only those
        for column, facts in enumerate(screen.comparison.runs, start=1):
            assert facts.best_val_acc is not None and facts.best_val_acc > 0.3
            assert facts.wall_s is not None and 0 < facts.wall_s < 300
            assert facts.host_peak is not None and facts.host_peak > 100 << 20  # a torch process, at least
            shown = dict(zip(names, (str(c) for c in table.get_column_at(column)), strict=True))
            assert shown["val acc best/final"].startswith(f"{facts.best_val_acc:.4f}")
            assert shown["wall time"] == duration(facts.wall_s) and shown["host peak"] == human_bytes(
                facts.host_peak)
        plotted = {line.run_id for line in screen.query_one(LossPlot).lines}
        assert plotted == set(ids)
        chosen = screen.comparison.runs[0].id  # the cursor's run
        await pilot.press("e")
        await until(pilot, lambda: not isinstance(app.screen, CompareScreen), 10, "the form")
        await pilot.pause()
        highlighted = [row.id for row in app.main.query(".field.-differs")]
        assert highlighted == ["row-train-batch_size", "row-train-lr"]
        assert app.main.query_one("#train-batch_size", Input).has_focus  # the first differing key: ready
        app.main.query_one("#train-lr", Input).value = "0.02"  # the edit
        await pilot.press("escape", "l")
        new = lambda: next((r for r in app.board.runs if r not in ids), None)  # noqa: E731
        third = await until(pilot, new, 60, "the third run")
    want = protocol.config.read(home / "runs" / chosen / "config.toml")
    want["train"]["lr"] = 0.02
    assert protocol.config.read(home / "runs" / third / "config.toml") == want
    subprocess.run([sys.executable, "-m", "trainconsole.console", "kill", third],
                   env={"TRAINCONSOLE_HOME": str(home)},
                   cwd=REPO, capture_output=True, timeout=60)

    cli = trainconsole("compare", *ids, "--json", home=home)
    assert cli.returncode == 0, cli.stderr
    report = json.loads(cli.stdout)
    assert set(report["differs"]) == {"train.batch_size", "train.lr"}
    assert report["differs"]["train.lr"] == {ids[0]: 0.05, ids[1]: 0.1}
    by_id = {r["id"]: r for r in report["runs"]}
    for facts in screen.comparison.runs:
        got = by_id[facts.id]
        assert got["best_val_acc"] == facts.best_val_acc and got["wall_s"] == facts.wall_s
        assert got["mem"]["host"] == facts.host_peak and got["status"] == "finished"
    for bad in (["compare", ids[0], "no-such-run"], ["compare", ids[0]]):
        out = trainconsole(*bad, home=home)
        assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
        assert "Traceback" not in out.stderr
