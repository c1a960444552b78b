"""A read-only console (`trainconsole --read-only`, what `serve --read-only` runs per tab): every action's
key is refused with a message, through the control layer, and nothing changes; watching goes on."""

from __future__ import annotations

import subprocess
from pathlib import Path

import psutil
import pytest
from conftest import make_app, settle, until, write_run

from trainconsole.console.screens.confirm_screen import ConfirmScreen
from trainconsole.console.widgets.runs_table import RunsTable

SLEEPER = "20240305-131500-small-cnn-digits-e5e5"


@pytest.fixture
def sleeper(fixture_home: Path) -> subprocess.Popen[bytes]:
    """A live process recorded as a running run's own (what `k` would kill, were it allowed)."""
    process = subprocess.Popen(["sleep", "120"], start_new_session=True)
    started = psutil.Process(process.pid).create_time()
    write_run(fixture_home, SLEEPER, [{"t": 1_709_644_500.0, "type": "started"}],
              info={"pid": process.pid, "pgid": process.pid, "pid_started": started})
    yield process
    process.kill()
    process.wait()


def said(app: object) -> list[str]:
    return [n.message for n in app._notifications]  # type: ignore[attr-defined]


async def test_every_action_is_refused_with_a_message_and_nothing_changes(
        fixture_home: Path, sleeper: subprocess.Popen[bytes]) -> None:
    app = make_app(fixture_home)
    app.read_only = True
    before = sorted(p.name for p in (fixture_home / "runs").iterdir())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.control.read_only
        table = app.main.query_one(RunsTable)
        assert table.border_title == "runs (read-only)"
        assert not app.main.query_one("#setup").display  # no form: it could only launch
        table.move_cursor(row=table.get_row_index(SLEEPER))
        await pilot.pause()
        for key, action in (("l", "launch"), ("k", "kill"), ("s", "stop"), ("r", "resume"),
                            ("5", "the setup form"), ("o", "loading a config"), ("w", "saving a config")):
            await pilot.press(key)
            await until(pilot, lambda a=action: f"{a}: refused, this session is read-only" in said(app), 10,
                        f"{key} refused")
            assert not isinstance(app.screen, ConfirmScreen)
            assert app.main.pane == "runs"
        await pilot.pause(0.5)
    assert sorted(p.name for p in (fixture_home / "runs").iterdir()) == before  # nothing launched
    assert sleeper.poll() is None  # nothing killed or stopped


async def test_the_same_console_acts_when_not_read_only(fixture_home: Path) -> None:
    """The refusals above are read-only's: a console without it opens the form and asks before a kill."""
    app = make_app(fixture_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.main.query_one("#setup").display
        await pilot.press("k")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10, "the kill's confirm")
        await pilot.press("n")
        await pilot.press("5")
        await until(pilot, lambda: app.main.pane == "setup", 10, "the setup pane")
    assert not any("refused" in m for m in said(app))
