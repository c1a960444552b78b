"""A lost run's stderr, the likeliest cause, in `logs` and in the console's log pane."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

from conftest import demo_config, settle, until
from rich.console import Console
from textual.widgets import Static

from trainconsole import protocol
from trainconsole.console.app import TrainConsole
from trainconsole.console.services.gpu import SimulatedGpus
from trainconsole.control import runs

EXE = str(Path(sys.executable).parent / "trainconsole")
#: A run process that dies at its start, as one whose launch directory shadowed it did.
DIES = ("import sys, time; time.sleep(2); print('Traceback (most recent call last):', file=sys.stderr); "
        "print(\"ModuleNotFoundError: No module named 'trainers.scripts'\", file=sys.stderr); sys.exit(1)")
CAUSE = "its stderr ends: ModuleNotFoundError: No module named 'trainers.scripts'"


def pane_text(app: TrainConsole) -> str:
    """What the log pane's notes read, as plain text."""
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(app.main.query_one("#log-text", Static).content)
    return console.export_text()


async def test_a_lost_runs_stderr_is_its_cause_in_logs_and_the_log_pane(home: Path, tmp_path: Path) -> None:
    dies = [sys.executable, "-c", DIES]
    run = runs.launch(protocol.load(demo_config(tmp_path)), root=protocol.home(), argv=dies)
    app = TrainConsole(home=home, sampler=SimulatedGpus(1), config_path=demo_config(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("4")  # the log pane
        await until(pilot, lambda: protocol.run_status(run) == "lost", 30, "the run lost")
        await until(pilot, lambda: CAUSE in pane_text(app), 15, "the cause in the log pane")
    logs = subprocess.run([EXE, "logs", run.id], capture_output=True, text=True, timeout=60)
    assert logs.returncode == 0 and logs.stdout.strip().splitlines()[-1] == (
        "lost: the process is gone without a final event; " + CAUSE), logs.stdout
