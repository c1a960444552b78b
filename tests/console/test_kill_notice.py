"""One kill, one notice: the run's own `killed` event says it; nothing else does. A kill of a run already
killed says that there was nothing to kill (what `Control.kill` did, never guessed from the status after)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import demo_config, settle, until

from trainconsole import protocol
from trainconsole.console.app import TrainConsole
from trainconsole.console.services.gpu import SimulatedGpus
from trainconsole.control import runs

pytestmark = pytest.mark.slow


async def test_killing_a_run_gives_one_notice(home: Path, tmp_path: Path) -> None:
    run = runs.launch(protocol.load(demo_config(tmp_path)), root=protocol.home())
    app = TrainConsole(home=home, sampler=SimulatedGpus(1), config_path=demo_config(tmp_path))
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            await until(pilot, lambda: len(app.board.runs[run.id].train_loss) >= 1, 60, "the run to train")
            await pilot.press("k", "y")
            await until(pilot, lambda: protocol.run_status(run) == "killed", 30, "the run killed")
            await until(pilot, lambda: any("killed" in n.message for n in app._notifications), 10, "a notice")
            await pilot.pause(1.0)  # a second notice would come within this
            told = [n.message for n in app._notifications if run.id in n.message or "kill" in n.message]
            assert len(told) == 1 and "killed" in told[0], told
            await pilot.press("k", "y")  # again: this kill ends nothing, and says so
            idle = await until(pilot, lambda: [n.message for n in app._notifications
                                               if "nothing to kill" in n.message], 30, "the second word")
            assert f"{run.id} (killed)" in idle[0], idle
    finally:
        runs.kill(run)
