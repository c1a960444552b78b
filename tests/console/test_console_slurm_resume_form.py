"""The console's resume of a Slurm run asks for its new job's options, as `resume ID --time 2:00:00`: the
answer goes to the control layer's resume as its `--set`s (the control layer's resume recorded: no
cluster)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from conftest import settle, until
from textual.widgets import Input

from trainconsole.console.app import TrainConsole
from trainconsole.console.screens.path_screen import PathScreen
from trainconsole.console.services.gpu import SimulatedGpus
from trainconsole.console.slurm_options import resume_line_sets
from trainconsole.control.actions import Control

RUN = "r-slurm-0002"


def test_a_line_of_resume_options_is_resumes_sets() -> None:
    assert resume_line_sets("--time 2:00:00 --partition 'gpu a' --nodes 2") == [
        'slurm.time="2:00:00"', 'slurm.partition="gpu a"', "slurm.nodes=2"]
    assert resume_line_sets("") == []
    with pytest.raises(ValueError, match="not a resume option: --bogus"):
        resume_line_sets("--time 5 --bogus")
    with pytest.raises(ValueError, match="--nodes"):
        resume_line_sets("--nodes two")


async def test_r_on_a_slurm_run_asks_for_its_jobs_options(home: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    resumed: list[tuple[str, list[str] | None]] = []
    monkeypatch.setattr(Control, "resume", lambda self, run, epochs=None, slurm=None: resumed.append(
        (run.id, slurm)) or run)
    now = time.time()
    path = home / "runs" / RUN
    path.mkdir(parents=True)
    (path / "run.json").write_text(json.dumps({
        "id": RUN, "kind": "train", "started_at": now - 200, "ended_at": now - 120,
        "slurm": {"job_id": "7", "submitted_at": now - 210, "partition": "debug", "time": "1"}}))
    (path / "events.jsonl").write_text("".join(json.dumps({"v": 1, "run": RUN, **e}) + "\n" for e in [
        {"t": now - 199, "type": "started"},
        {"t": now - 121, "type": "killed", "cause": "time limit 00:01:00 reached",
         "slurm_state": "TIMEOUT"}]))
    app = TrainConsole(home=home, sampler=SimulatedGpus(0))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await until(pilot, lambda: app.main.selection.selected == RUN, 10, "the run to be selected")
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, PathScreen), 10, "the resume form")
        field = app.screen.query_one(Input)
        assert field.value == "--time 1"  # its job's options as they were
        field.value = "--time 2:00:00 --qos high"
        await pilot.press("enter")
        await until(pilot, lambda: bool(resumed), 10, "the resume")
        assert resumed == [(RUN, ['slurm.time="2:00:00"', 'slurm.qos="high"'])]

        await pilot.press("r")  # a line resume does not take: said, nothing resumed
        await until(pilot, lambda: isinstance(app.screen, PathScreen), 10, "the resume form")
        app.screen.query_one(Input).value = "--tme 5"
        await pilot.press("enter")
        await pilot.pause(0.3)
        assert resumed == [(RUN, ['slurm.time="2:00:00"', 'slurm.qos="high"'])]
