"""Every key action, driven through the pilot against real training runs (digits demo, CPU)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from conftest import alive, demo_config, family, settle, until
from textual.widgets.data_table import CellDoesNotExist, RowDoesNotExist

from trainconsole import protocol
from trainconsole.console.app import TrainConsole
from trainconsole.console.screens.confirm_screen import ConfirmScreen
from trainconsole.console.services.gpu import SimulatedGpus
from trainconsole.console.widgets.loss_plot import LossPlot
from trainconsole.console.widgets.runs_table import RunsTable
from trainconsole.control import runs

pytestmark = pytest.mark.slow


def console(home: Path, tmp_path: Path) -> TrainConsole:
    return TrainConsole(home=home, sampler=SimulatedGpus(1), config_path=demo_config(tmp_path))


def cell(app: TrainConsole, run_id: str, column: str) -> str:
    """The runs table's cell; '' while the run has no row yet (it is selected before its row is drawn)."""
    try:
        return str(app.main.query_one(RunsTable).get_cell(run_id, column))
    except (CellDoesNotExist, RowDoesNotExist):
        return ""


def steps(app: TrainConsole, run_id: str) -> int:
    return len(app.board.runs[run_id].train_loss)  # the app's own board: no lock


@pytest.fixture
def long_run(home: Path, tmp_path: Path):
    """A real digits run with many epochs, started as the CLI would; killed at the end of the test."""
    run = runs.launch(protocol.load(demo_config(tmp_path)), root=protocol.home())
    yield run
    runs.kill(run)


async def test_l_launches_the_form_config_and_plots_its_loss(home: Path, tmp_path: Path) -> None:
    app = console(home, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("l")
        run_id = await until(pilot, lambda: app.main.selection.selected, 30, "the new run to be selected")
        await until(pilot, lambda: cell(app, run_id, "status") == "running", 30, "status running")
        await until(pilot, lambda: steps(app, run_id) >= 3, 60, "loss to be plotted")
        app.main.frames.draw_frame()
        app.main.frames.draw_plot()
        plotted = [line for line in app.main.query_one(LossPlot).lines if line.kind == "train"]
        assert plotted and plotted[0].run_id == run_id and len(plotted[0].xs) >= 3
        assert cell(app, run_id, "loss") != "-"
        pids = family(protocol.RunDir(home / "runs" / run_id).read_info()["pid"])
        runs.kill(protocol.RunDir(home / "runs" / run_id))
    assert not alive(pids)


async def test_s_stops_then_r_resumes(home: Path, tmp_path: Path, long_run: protocol.RunDir) -> None:
    app = console(home, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await until(pilot, lambda: steps(app, long_run.id) >= 2, 60, "the run to train")
        first_pid = long_run.read_info()["pid"]
        await pilot.press("s")
        await until(pilot, lambda: cell(app, long_run.id, "status") == "stopped", 60, "status stopped")
        await until(pilot, lambda: not alive([first_pid]), 30, "the stopped process to exit")
        assert long_run.last_ckpt.exists()
        await pilot.press("r")
        await until(pilot, lambda: long_run.read_info()["pid"] != first_pid, 60, "a new process")
        before = steps(app, long_run.id)
        await until(pilot, lambda: cell(app, long_run.id, "status") == "running", 30, "status running")
        await until(pilot, lambda: steps(app, long_run.id) > before, 60, "the resumed run to train")
        assert alive([long_run.read_info()["pid"]])


async def test_k_kills_only_after_yes(home: Path, tmp_path: Path, long_run: protocol.RunDir) -> None:
    app = console(home, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await until(pilot, lambda: steps(app, long_run.id) >= 1, 60, "the run to train")
        pids = family(long_run.read_info()["pid"])
        await pilot.press("k")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await pilot.pause(0.5)
        assert alive(pids) == pids and cell(app, long_run.id, "status") == "running"
        await pilot.press("k", "y")
        await until(pilot, lambda: cell(app, long_run.id, "status") == "killed", 30, "status killed")
        assert not alive(pids)


async def test_q_quits_leaving_the_run_and_a_new_console_replays_it(
        home: Path, tmp_path: Path, long_run: protocol.RunDir) -> None:
    app = console(home, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await until(pilot, lambda: steps(app, long_run.id) >= 2, 60, "the run to train")
        await pilot.press("q")
    assert "keep going" in app.goodbye
    pid = long_run.read_info()["pid"]
    assert alive([pid]), "quitting the console stopped the run"
    logged = sum(e["type"] == "step" for e in protocol.read_all(long_run.events))
    again = console(home, tmp_path)
    async with again.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        seen = steps(again, long_run.id)
        assert seen >= logged  # the whole history, not only what came after
        await until(pilot, lambda: steps(again, long_run.id) > seen, 60, "live updates")
        assert cell(again, long_run.id, "status") == "running"


async def test_a_run_that_vanishes_is_shown_lost(home: Path, tmp_path: Path,
                                                 long_run: protocol.RunDir) -> None:
    app = console(home, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await until(pilot, lambda: steps(app, long_run.id) >= 1, 60, "the run to train")
        for pid in family(long_run.read_info()["pid"]):
            os.kill(pid, signal.SIGKILL)
        await until(pilot, lambda: cell(app, long_run.id, "status") == "lost", 20, "status lost")
        assert app.board.runs[long_run.id].alive is False
    assert protocol.run_status(long_run) == "lost"  # the console and `ls` agree: one rule for both
