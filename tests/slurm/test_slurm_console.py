"""The console watches a Slurm run as any other: queued with its job in the log pane, then running,
then finished with its accuracy in the row."""

from __future__ import annotations

import getpass
import io
from pathlib import Path

import pytest
from rich.console import Console
from slurm_cluster import Cluster
from slurm_helpers import DIGITS, cli, fill_nodes, launch, row
from textual.widgets import Static
from textual.widgets.data_table import CellDoesNotExist

from trainconsole.console.app import TrainConsole
from trainconsole.console.services.gpu import SimulatedGpus
from trainconsole.console.widgets.run_log import RunLog
from trainconsole.console.widgets.runs_table import RunsTable

pytestmark = pytest.mark.slow


def log_text(app: TrainConsole) -> str:
    """The log pane's notes as the terminal shows them."""
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(app.main.query_one("#log-text", Static).content)
    return console.export_text()


async def test_the_console_follows_a_slurm_run_to_its_end(cluster: Cluster, home: Path) -> None:
    run_id = launch(DIGITS, "--slurm", "--time", "10", "--set", "train.epochs=3")
    app = TrainConsole(home=home, sampler=SimulatedGpus(0), config_path=Path(DIGITS))
    async with app.run_test(size=(120, 40)) as pilot:
        seen: set[str] = set()

        def status() -> str:
            table = app.main.query_one(RunsTable) if app.dashboard else None
            try:
                state = str(table.get_cell(run_id, "status")) if table and run_id in app.board.runs else ""
            except CellDoesNotExist:  # on the board, not yet drawn in the table
                state = ""
            seen.add(state)
            return state

        for _ in range(2400):  # up to 4 minutes
            if status() == "finished":
                break
            await pilot.pause(0.1)
        assert status() == "finished" and "running" in seen
        notes = [note.text for note in app.board.runs[run_id].notes]
        assert any(text.startswith("queued: Slurm job ") for text in notes), notes
        assert app.board.runs[run_id].best_val_acc == pytest.approx(row(run_id)["last"]["best_val_acc"])
        await pilot.pause(0.5)
        job = row(run_id)["slurm"]  # its job in the log pane, as `ls` gives it
        title = str(app.main.query_one(RunLog).border_title)
        assert title.endswith(f" · Slurm job {job['job_id']}, debug, {job['nodes']}, limit 10:00"), title


async def test_a_waiting_job_shows_slurms_reason_in_its_status_cell(cluster: Cluster, home: Path) -> None:
    holders = fill_nodes(cluster)
    run_id = launch(DIGITS, "--slurm")
    app = TrainConsole(home=home, sampler=SimulatedGpus(0), config_path=Path(DIGITS))
    async with app.run_test(size=(160, 40)) as pilot:

        def status() -> str:
            table = app.main.query_one(RunsTable) if app.dashboard else None
            try:
                return str(table.get_cell(run_id, "status")) if table and run_id in app.board.runs else ""
            except CellDoesNotExist:
                return ""

        for _ in range(600):  # up to a minute
            if status() in ("queued: Resources", "queued: Priority"):
                break
            await pilot.pause(0.1)
        assert status() in ("queued: Resources", "queued: Priority")
        assert row(run_id)["slurm"]["reason"] in status()  # the word `ls` gives
        held = [f"its nodes held by job {job} wrap ({getpass.getuser()}, " for job in holders]
        for _ in range(100):  # squeue's view of who holds the nodes, in the log pane (no second terminal)
            if all(line in log_text(app) for line in held):
                break
            await pilot.pause(0.1)
        assert all(line in log_text(app) for line in held), log_text(app)
    assert cli("kill", run_id).returncode == 0
