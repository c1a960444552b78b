"""The setup pane's script form (ctrl+t): a training script launched from the console as a script run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import settle, until
from textual.widgets import Input, Static

from trainconsole.console.app import TrainConsole
from trainconsole.console.screens.path_screen import PathScreen
from trainconsole.console.services.gpu import SimulatedGpus
from trainconsole.console.widgets.run_form import RunForm

pytestmark = pytest.mark.slow

SCRIPT = "import sys\nfor i in range(3):\n    print(f'step {i + 1} loss: {1 / (i + 1)}')\nprint(sys.argv[1:])"


def events(home: Path, run_id: str) -> list[dict]:
    return [json.loads(line) for line in (home / "runs" / run_id / "events.jsonl").read_text().splitlines()]


async def test_script_form_launches_a_script_run(home: Path, tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    app = TrainConsole(home=home, sampler=SimulatedGpus(1), config_path="examples/digits.toml")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("5")
        form = app.main.query_one(RunForm)
        assert not form.query_one("#row-script-path").display
        await pilot.press("ctrl+t")
        assert form.script_mode and form.query_one("#row-script-path").display
        assert not form.query_one("#row-model-name").display
        assert form.check() is None  # no script yet: the form says it is required
        form.query_one("#script-path", Input).value = str(script)
        form.query_one("#script-args", Input).value = "--epochs 2 --note 'two words'"
        config = form.check()
        assert config is not None and config["script"]["args"] == ["--epochs", "2", "--note", "two words"]
        form.query_one("#script-path", Input).focus()
        await pilot.press("enter")
        run_id = await until(pilot, lambda: app.main.selection.selected, 30, "the new run to be selected")
        done = await until(pilot, lambda: [e for e in events(home, run_id) if e["type"] == "finished"], 60,
                           "the script to finish")
    info = json.loads((home / "runs" / run_id / "run.json").read_text())
    assert info["kind"] == "script" and done
    assert [e["loss"] for e in events(home, run_id) if e["type"] == "step"] == [1.0, 0.5, 1 / 3]
    printed = (home / "runs" / run_id / "stdout.log").read_text()
    assert "['--epochs', '2', '--note', 'two words']" in printed


async def test_ctrl_t_back_gives_the_config_form_and_a_train_run_config(home: Path) -> None:
    app = TrainConsole(home=home, sampler=SimulatedGpus(1), config_path="examples/digits.toml")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("5", "ctrl+t", "ctrl+t")
        form = app.main.query_one(RunForm)
        assert not form.script_mode and form.query_one("#row-model-name").display
        config = form.check()
        assert config is not None and config["script"]["path"] == ""


async def test_ctrl_t_on_a_loaded_tune_file_drops_and_brings_back_its_search_header(home: Path) -> None:
    app = TrainConsole(home=home, sampler=SimulatedGpus(1), config_path="examples/digits.toml")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        form = app.main.query_one(RunForm)
        header = form.query_one("#form-source", Static)
        await pilot.press("o")
        await until(pilot, lambda: isinstance(app.screen, PathScreen), 5, "the path dialog")
        app.screen.query_one(Input).value = "examples/tune_digits_optuna.toml"
        await pilot.press("enter")
        await until(pilot, lambda: str(header.render()).startswith("tune: optuna"), 5, "the search's header")
        await pilot.press("5", "ctrl+t")
        assert form.script_mode and str(header.render()) == "from examples/tune_digits_optuna.toml"
        await pilot.press("ctrl+t")
        assert str(header.render()).startswith("tune: optuna")
