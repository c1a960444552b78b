"""The runs table's filter line (`/`, the ls --filter language), its sort column (`>`, `<`, a header click),
and the tags and notes shown and set (`#`, `a`, and the CLI's while the console is open)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from conftest import T0, alive, demo_config, family, make_app, settle, training, until, write_run
from textual.widgets import Input

from trainconsole import protocol
from trainconsole.console.app import TrainConsole
from trainconsole.console.screens.confirm_screen import ConfirmScreen
from trainconsole.console.screens.path_screen import PathScreen
from trainconsole.console.services.gpu import SimulatedGpus
from trainconsole.console.widgets.filter_line import FilterLine
from trainconsole.console.widgets.runs_table import RunsTable
from trainconsole.control import runs
from trainconsole.protocol import RunDir
from trainconsole.protocol.meta import read_meta

EXE = str(Path(sys.executable).parent / "trainconsole")
#: Four finished runs: their learning rates straddle 0.05, their final losses fall as the ids go up.
LRS = {f"20240305-10{i}000-small-cnn-digits-00a{i}": lr for i, lr in enumerate((0.01, 0.03, 0.1, 0.3))}


def lr_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    for i, (run_id, lr) in enumerate(LRS.items()):
        events = training(T0 + 600 * i, 100, 2, scale=1.0 / (i + 1))
        run = write_run(home, run_id, [*events, {"t": T0 + 600 * i + 9, "type": "finished"}], epochs=2)
        text = run.config.read_text().replace("lr = 0.05", f"lr = {lr}")
        assert f"lr = {lr}" in text
        run.config.write_text(text)
    return home


def rows(app) -> list[str]:
    return list(app.main.query_one(RunsTable)._order)


async def type_filter(pilot, text: str) -> None:
    await pilot.press("slash")
    field = pilot.app.main.query_one("#filter-input", Input)
    assert field.has_focus
    field.value = text
    await pilot.press("enter")


async def test_slash_filters_the_table_as_ls_does_and_a_bad_filter_says_which_term(tmp_path: Path) -> None:
    home = lr_home(tmp_path)
    app = make_app(home)
    low = [run_id for run_id, lr in LRS.items() if lr < 0.05]
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert sorted(rows(app)) == sorted(LRS)
        await type_filter(pilot, "lr<0.05")
        await until(pilot, lambda: sorted(rows(app)) == sorted(low), 5, "only the runs under the bound")
        await type_filter(pilot, "lr<=0.1 -lr=0.01")  # the bound itself is in; a negated term
        want = [run_id for run_id, lr in LRS.items() if 0.01 < lr <= 0.1]
        await until(pilot, lambda: sorted(rows(app)) == sorted(want), 5, "the runs from 0.03 to 0.1")
        await type_filter(pilot, "lr<0.05 colour:red")
        await pilot.pause(0.3)
        error = str(app.main.query_one("#filter-error").render())
        assert "'colour:red'" in error and "Traceback" not in error and "\n" not in error.strip(), error
        assert sorted(rows(app)) == sorted(want)  # the last good filter still holds
        await pilot.press("escape")
        await until(pilot, lambda: sorted(rows(app)) == sorted(LRS), 5, "every run again")
        assert not app.main.query_one(FilterLine).has_class("-open")


async def test_a_filtered_table_takes_a_new_matching_run_and_sorts_by_any_column(tmp_path: Path) -> None:
    home = lr_home(tmp_path)
    app = make_app(home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await type_filter(pilot, "status:finished")
        await until(pilot, lambda: len(rows(app)) == 4, 5, "the finished runs")
        await pilot.press("greater_than_sign")  # by the run's name... then status, strategy, epoch, loss
        await pilot.press(*["greater_than_sign"] * 4)
        assert app.main.arrangement.sort == "loss"
        await until(pilot, lambda: rows(app) == list(reversed(LRS)), 5, "smallest loss first")
        await pilot.press("less_than_sign")
        await until(pilot, lambda: rows(app) == list(LRS), 5, "largest loss first")
        new_id = "20240305-110000-small-cnn-digits-00b0"
        events = [*training(T0 + 9000, 100, 2, scale=9.0), {"t": T0 + 9009, "type": "finished"}]
        write_run(home, new_id, events)
        await until(pilot, lambda: rows(app) == [new_id, *LRS], 5, "the new run first (largest loss)")
        table = app.main.query_one(RunsTable)

        def header(name: str) -> tuple[int, int]:  # under the pane's border, at the column's first cell
            before = list(table.columns.values())[:list(table.columns).index(name)]
            return sum(c.get_render_width(table) for c in before) + 2, 1

        await pilot.click(RunsTable, offset=header("elapsed"))
        await until(pilot, lambda: app.main.arrangement.sort == "elapsed", 5, "a sort by the header clicked")
        await pilot.click(RunsTable, offset=header("loss"))  # smallest first
        await until(pilot, lambda: rows(app) == [*reversed(LRS), new_id], 5, "the smallest loss first")
        await pilot.click(RunsTable, offset=header("loss"))  # again: the other way
        await until(pilot, lambda: rows(app) == [new_id, *LRS], 5, "the largest loss first")


async def test_tags_set_by_the_cli_show_within_a_second_and_keys_tag_and_note(tmp_path: Path) -> None:
    home = lr_home(tmp_path)
    app = make_app(home)
    first = next(iter(LRS))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        start = time.monotonic()
        out = subprocess.run([EXE, "tag", first, "+baseline"], capture_output=True, text=True, timeout=60,
                             env={"TRAINCONSOLE_HOME": str(home), "PATH": "/usr/bin:/bin"})
        assert out.returncode == 0, out.stderr
        start = time.monotonic()
        table = app.main.query_one(RunsTable)
        await until(pilot, lambda: "#baseline" in table._cells[first][0], 5, "the tag in the row")
        assert time.monotonic() - start < 1.5
        assert "#ba" in str(table.get_cell(first, "run"))  # at 80x24 the tags get a third of the name column
        table.select(first)
        await pilot.pause()
        await pilot.press("number_sign")
        assert isinstance(app.screen, PathScreen)
        app.screen.query_one(Input).value = "keep lr-sweep"
        await pilot.press("enter")
        meta = RunDir(home / "runs" / first)
        await until(pilot, lambda: read_meta(meta).get("tags") == ["keep", "lr-sweep"], 5, "the tags written")
        await pilot.press("a")
        app.screen.query_one(Input).value = "the baseline for the sweep"
        await pilot.press("enter")
        await until(pilot, lambda: read_meta(meta).get("note") == "the baseline for the sweep", 5, "the note")
        title = "runs · selected: #keep #lr-sweep · the baseline for the sweep"
        await until(pilot, lambda: table.border_title == title, 5, "the selected run's tags and note whole")
        await type_filter(pilot, "sweep")  # a word matches tags and notes, as in ls
        await until(pilot, lambda: rows(app) == [first], 5, "the tagged run alone")


async def test_k_kills_every_marked_run_after_one_confirm(home: Path, tmp_path: Path) -> None:
    config = protocol.load(demo_config(tmp_path))
    found = [runs.launch(config, root=protocol.home()) for _ in range(3)]
    spare = runs.launch(config, root=protocol.home())  # not marked: it must live on
    try:
        app = TrainConsole(home=home, sampler=SimulatedGpus(1), config_path=demo_config(tmp_path))
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            table = app.main.query_one(RunsTable)
            await until(pilot, lambda: all(str(table.get_cell(r.id, "status")) == "running"
                                           for r in [*found, spare]), 90, "four runs running")
            pids = [p for r in found for p in family(r.read_info()["pid"])]
            assert len(pids) >= 3 and not set(pids) & set(family(spare.read_info()["pid"]))
            for run in found:
                table.select(run.id)
                await pilot.pause()
                await pilot.press("space")
            await pilot.press("k")
            assert isinstance(app.screen, ConfirmScreen) and "Kill 3 runs" in app.screen.question
            await pilot.press("y")
            await until(pilot, lambda: not alive(pids), 15, "every marked run's processes gone")
            await until(pilot, lambda: all(str(table.get_cell(r.id, "status")) == "killed" for r in found),
                        10, "three rows killed")
            assert runs.status(spare) == "running" and alive([spare.read_info()["pid"]])
    finally:
        for run in [*found, spare]:
            runs.kill(run)
