"""The dashboard's delete key (y/n, the marked runs or the selected one) and runs deleted or tagged from
the CLI while the console is open: through the control layer, gone from the table within a second."""

from __future__ import annotations

import time
from pathlib import Path

from conftest import FINISHED, RUNNING, STOPPED, make_app, settle, until

from trainconsole.console.screens.confirm_screen import ConfirmScreen
from trainconsole.console.widgets.runs_table import RunsTable
from trainconsole.control import Control


def rows(app) -> list[str]:
    return list(app.main.query_one(RunsTable)._order)


def errors(app) -> list[str]:
    return [n.message for n in app._notifications if n.severity == "error"]


async def test_delete_asks_then_moves_the_selected_run_to_the_trash(fixture_home: Path) -> None:
    app = make_app(fixture_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.main.query_one(RunsTable).select(FINISHED)
        await pilot.pause()
        await pilot.press("delete")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await pilot.pause(0.3)
        assert (fixture_home / "runs" / FINISHED).is_dir() and FINISHED in rows(app)
        await pilot.press("delete", "y")
        await until(pilot, lambda: FINISHED not in rows(app), 10, "its row to go")
        assert (fixture_home / "trash" / FINISHED / "events.jsonl").exists()
        assert not (fixture_home / "runs" / FINISHED).exists() and not errors(app)


async def test_delete_of_marked_runs_with_a_running_one_is_refused_whole(fixture_home: Path) -> None:
    app = make_app(fixture_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        for run_id in (STOPPED, RUNNING):
            app.main.query_one(RunsTable).select(run_id)
            await pilot.pause()
            await pilot.press("space")
        await pilot.press("delete", "y")
        await until(pilot, lambda: any("running" in n.message for n in app._notifications), 10, "the refusal")
        await pilot.pause(1.2)
        assert STOPPED in rows(app) and RUNNING in rows(app)
        assert (fixture_home / "runs" / STOPPED).is_dir() and not (fixture_home / "trash").exists()


async def test_a_run_deleted_by_the_cli_leaves_the_table_within_a_second(fixture_home: Path) -> None:
    app = make_app(fixture_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        door = Control(fixture_home)
        door.tag(door.run(STOPPED), ["baseline"], [])  # a tag while the console reads the run: no harm
        start = time.monotonic()
        door.remove([door.run(STOPPED)])
        await until(pilot, lambda: STOPPED not in rows(app), 5, "the deleted run's row to go")
        assert time.monotonic() - start < 1.5 and not errors(app)
        door.restore(STOPPED)
        await until(pilot, lambda: STOPPED in rows(app), 5, "the restored run's row")
