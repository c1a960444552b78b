"""Keys that need no live run, on the fixed runs: overlay, sort, panes, help, the form, load and save."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from conftest import FAILED, FINISHED, RUNNING, make_app, settle, until
from rich.console import Console
from textual.widgets import Input, Static
from textual.widgets._footer import FooterKey

from trainconsole import protocol
from trainconsole.console.screens.help_screen import HelpScreen
from trainconsole.console.screens.keys import WHY_NOT
from trainconsole.console.screens.path_screen import PathScreen
from trainconsole.console.screens.start_screen import StartScreen
from trainconsole.console.widgets.gpu_bars import GpuBars
from trainconsole.console.widgets.loss_plot import LossPlot
from trainconsole.console.widgets.run_log import RunLog
from trainconsole.console.widgets.runs_table import RunsTable
from trainconsole.console.widgets.weight_histogram import WeightHistogram


async def test_space_overlays_runs_on_the_plot(fixture_home: Path) -> None:
    app = make_app(fixture_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("space", "down", "down")
        app.main.frames.draw_frame()
        app.main.frames.draw_plot()
        plot = app.main.query_one(LossPlot)
        assert {line.run_id for line in plot.lines} == {RUNNING, FINISHED}
        assert plot.lines[0].run_id == FINISHED  # the selected run first
        await pilot.press("up", "up", "space")  # back on the overlaid run: space takes it off
        app.main.frames.draw_frame()
        app.main.frames.draw_plot()
        assert {line.run_id for line in plot.lines} == {RUNNING} and app.main.selection.marked == []


async def test_b_sorts_by_best_accuracy(fixture_home: Path) -> None:
    app = make_app(fixture_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        table = app.main.query_one(RunsTable)
        assert table._order[0] == RUNNING
        await pilot.press("b")
        app.main.frames.draw_frame()
        app.main.frames.draw_plot()
        accs = [app.board.runs[rid].best_val_acc or 0 for rid in table._order]
        assert accs == sorted(accs, reverse=True) and table._order[0] == RUNNING


async def test_number_keys_switch_panes_when_narrow(fixture_home: Path) -> None:
    app = make_app(fixture_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        for key, pane in (("2", "plot"), ("3", "devices"), ("4", "log"), ("5", "setup"), ("escape", "runs")):
            await pilot.press(key)
            await pilot.pause()
            visible = [name for name in ("runs", "plot", "devices", "log", "setup")
                       if app.main.query_one(f"#{name}").display and app.main.query_one(f"#{name}").region]
            assert visible == [pane], key


async def test_enter_on_a_run_shows_its_plot_and_log(fixture_home: Path) -> None:
    app = make_app(fixture_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("down", "enter")
        await pilot.pause(0.3)
        assert app.main.pane == "plot" and app.main.selection.selected == FAILED
        app.main.frames.draw_frame()
        app.main.frames.draw_plot()
        assert app.main.query_one(LossPlot).lines[0].run_id == FAILED
        assert app.main.query_one(RunLog).has_class("-failed")


#: What a user must find under `?` (key as shown, a word of its description), written out here rather than
#: read from the bindings, so that a key dropped from the help screen fails this test.
HELP_KEYS = [("l f5", "Launch"), ("s", "Stop"), ("k", "Kill"), ("r", "Resume"), ("space", "Mark"),
             ("x", "Stop the selected trial"), ("t", "Train the selected"), ("c", "Compare the overlaid"),
             ("h", "weight histograms"), ("[ ]", "the next layer"),
             ("?", "Help"), ("q", "Quit"), ("b", "Sort"), ("n 5", "Setup"), ("1", "Runs"), ("2", "Plot"),
             ("3", "Devices"), ("4", "Log"), ("o", "Load"), ("w", "Save"), ("escape", "Back"),
             ("↑ ↓ pgup pgdn", "Move"), ("enter", "launch"), ("2", "trials"),
             ("ctrl+t", "Script / config"), ("a", "All keys"), ("e", "setup form with the run's config"),
             ("escape c", "Back"), ("/", "match a filter"), (">", "next column"), ("<", "Reverse"),
             ("#", "tags"), ("a", "note"), ("s", "marked"), ("k", "marked"), ("r", "marked"),
             ("delete", "marked")]
HELP_CONTEXTS = ["dashboard", "setup form (5 or n)", "compare (c, with two runs overlaid)", "anywhere"]
FOOTER_KEYS = ["l Launch", "s Stop", "k Kill", "r Resume", "space Mark", "h Weights", "/ Filter", "? Help",
               "q Quit"]


def plain(renderable: object, width: int = 100) -> str:
    """A Rich renderable as plain text."""
    console = Console(width=width, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


async def test_question_mark_lists_every_key(fixture_home: Path) -> None:
    app = make_app(fixture_home)
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot)
        footer = " ".join(plain(key.render()).strip() for key in app.main.query(FooterKey))
        assert [k for k in FOOTER_KEYS if k not in footer] == []
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = plain(app.screen.query(Static).first().content)
        lines = [" ".join(line.split()) for line in text.splitlines()]
        missing = [(key, word) for key, word in HELP_KEYS
                   if not any(line.startswith(f"{key} ") and word in line for line in lines)]
        assert missing == []
        assert [line for line in lines if line in HELP_CONTEXTS] == HELP_CONTEXTS
        assert len([line for line in lines if line.startswith("[")]) == 1  # `[ ]` once, `[` not again
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_invalid_field_is_flagged_and_l_refuses(fixture_home: Path) -> None:
    app = make_app(fixture_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        lr = app.main.query_one("#train-lr", Input)
        lr.value = "-1"
        await pilot.pause()
        error = app.main.query_one("#train-lr-error")
        assert error.display and "must be > 0 and <= 10" in str(error.render())
        await pilot.press("escape", "l")
        await pilot.pause(0.3)
        assert app.focused is lr and len(protocol.list_runs(fixture_home)) == 5


async def test_w_saves_and_o_loads_the_form(fixture_home: Path, tmp_path: Path) -> None:
    app = make_app(fixture_home)
    saved = tmp_path / "mine.toml"
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.main.query_one("#train-epochs", Input).value = "7"
        await pilot.press("escape", "w")
        await until(pilot, lambda: isinstance(app.screen, PathScreen), 5, "the path dialog")
        proposed = Path(app.screen.query_one(Input).value)  # loaded from examples/digits.toml: not that
        assert proposed.name == "digits.toml" and proposed.parent == Path.cwd() != Path("examples").resolve()
        app.screen.query_one(Input).value = str(saved)
        await pilot.press("enter")
        await until(pilot, saved.exists, 5, "the file")
        assert protocol.load(saved)["train"]["epochs"] == 7
        saved.write_text(saved.read_text().replace("epochs = 7", "epochs = 9"))
        await pilot.press("o")
        await until(pilot, lambda: isinstance(app.screen, PathScreen), 5, "the path dialog")
        await pilot.press("enter")  # prefilled with the path last used
        epochs = app.main.query_one("#train-epochs", Input)
        await until(pilot, lambda: epochs.value == "9", 5, "the loaded form")


async def test_ddp_memory_shows_every_rank(fixture_home: Path) -> None:
    ranks = [{"rank": r, "node": 0, "device": f"cuda:{r}", "rss": 800 << 20, "allocated": 1 << 30,
              "reserved": 2 << 30, "peak": 3 << 30} for r in range(2)]
    devices = [{k: r[k] for k in ("device", "rank", "node", "allocated", "reserved", "peak")} for r in ranks]
    app = make_app(fixture_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("3")
        bars = app.main.query_one(GpuBars)
        bars.show_run("cnn·a1b2", {"devices": devices, "ranks": ranks, "rss": 800 << 20})
        shown = bars.render()
        text = "\n".join(str(part) for part in getattr(shown, "renderables", [shown]))
    assert "torch rank 1 cuda:1  allocated 1G  reserved 2G  peak 3G" in text
    assert "host rss 1.56G over 2 ranks" in text


async def test_the_first_frame_waits_for_the_dashboard_before_its_keys_act(fixture_home: Path) -> None:
    app = make_app(fixture_home)
    assert StartScreen().check_action("launch", ()) is None and app.check_action("quit", ()) is True  # dimmed
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.dashboard and type(app.main).__name__ == "MainScreen"
        assert app.main.check_action("launch", ()) is True


async def test_h_shows_a_layers_histogram_per_epoch_and_brackets_change_the_layer(fixture_home: Path) -> None:
    app = make_app(fixture_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("h")
        await pilot.pause()
        app.main.frames.draw_plot()
        await pilot.pause()
        view = app.main.query_one(WeightHistogram)
        assert app.main.pane == "plot" and view.region and not app.main.query_one(LossPlot).region
        assert view.border_title == "weights: conv1.weight (1/2)"
        assert [s.epoch for s in view.history] == list(range(1, 11))  # the running run's 10 epochs
        text = plain(view.render(), 80)
        assert "ep   1" in text and "ep  10" in text and "█" in text
        footer = " ".join(plain(key.render()).strip() for key in app.main.query(FooterKey))
        assert "[ ] Layer" in footer and "q Quit" in footer and "space Mark" not in footer
        await pilot.press("right_square_bracket")
        app.main.frames.draw_plot()
        assert view.border_title == "weights: fc.bias (2/2)" and view.history[-1].high == pytest.approx(0.1)
        await pilot.press("left_square_bracket", "left_square_bracket")
        app.main.frames.draw_plot()
        assert app.main.selection.layer == "fc.bias"  # wrapped round
        await pilot.press("h")
        await pilot.pause()
        app.main.frames.draw_plot()
        await pilot.pause()
        assert app.main.query_one(LossPlot).region and not view.region


async def test_a_recovered_out_of_memory_is_marked_on_the_plot(fixture_home: Path) -> None:
    app = make_app(fixture_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        plot = app.main.query_one(LossPlot)
        assert [line.xs for line in plot.lines if line.kind == "oom"] == [[120]]
        assert "OOM" in plot.border_subtitle


async def test_a_key_that_cannot_act_on_the_selection_says_why(fixture_home: Path) -> None:
    """x, t, c, [ on a training run (no search, nothing overlaid, no weights view): hidden from the footer,
    and pressed anyway each answers in a toast instead of doing nothing."""
    app = make_app(fixture_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert not app.main.selection.is_tune(app.main.board)
        for key in ("x", "t", "c", "right_square_bracket"):
            await pilot.press(key)
        await pilot.pause(0.2)
        said = [n.message for n in app._notifications]
        assert said == [WHY_NOT["stop_trial"], WHY_NOT["train_trial"], WHY_NOT["compare"], WHY_NOT["layer"]]
        assert len(protocol.list_runs(fixture_home)) == 5  # and nothing was done
