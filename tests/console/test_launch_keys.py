"""Where `l` launches, as `?` and the README say: from any pane, but in a text field it is typed (a form
field once had `model` become `l`); there `f5` launches."""

from __future__ import annotations

from pathlib import Path

from conftest import REPO, demo_config, settle, until
from textual.widgets import Input

from trainconsole.console.app import TrainConsole
from trainconsole.console.screens.help_screen import HelpScreen
from trainconsole.console.services.gpu import SimulatedGpus
from trainconsole.control import runs
from trainconsole.protocol import RunDir


def console(home: Path, tmp_path: Path) -> TrainConsole:
    return TrainConsole(home=home, sampler=SimulatedGpus(1), config_path=demo_config(tmp_path))


def test_help_and_readme_say_where_l_launches(home: Path, tmp_path: Path) -> None:
    rows = HelpScreen.of(console(home, tmp_path).help_sections()).rows
    (said,) = [what for context, key, what in rows if context == "dashboard" and key.split()[0] == "l"]
    assert "text field" in said and "f5 launches" in said, said
    readme = " ".join((REPO / "README.md").read_text().split())
    assert "in a text field (a form field, the filter) it is typed: there `f5` launches" in readme


async def test_in_a_form_field_l_is_typed_and_f5_launches(home: Path, tmp_path: Path) -> None:
    app = console(home, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("5")
        field = await until(pilot, lambda: isinstance(app.focused, Input) and app.focused, 10, "a form field")
        before = field.value
        await pilot.press("l")
        await pilot.pause(0.5)
        assert field.value != before and "l" in field.value  # typed, as the help says
        assert not (home / "runs").exists() or not list((home / "runs").iterdir())  # nothing launched
        await pilot.press("backspace", *before)  # typed back
        assert field.value == before
        await pilot.press("f5")
        made = await until(pilot, lambda: (home / "runs").exists() and list((home / "runs").iterdir()), 30,
                           "the launched run")
        runs.kill(RunDir(made[0]))
