"""The tune leaderboard pane: ranked trials from a tune run's log, stop one trial (x), train one (t)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import T0, after, make_app, settle, until, write_run

from trainconsole import protocol
from trainconsole.console.widgets.leaderboard import Leaderboard

TUNE = "20240305-131500-tune-digits-5e5e"
NARROW, WIDE, HUGE = (80, 24), (120, 40), (170, 40)
SPACE = '[tune]\nsearch = "random"\nmetric = "val_acc"\nmode = "max"\n[tune.space]\n' \
        '"train.lr" = { loguniform = [0.001, 0.3] }\n"train.batch_size" = { choice = [32, 64, 128] }\n'


def trial(n: int, status: str, iteration: int, acc: float | None, lr: float, bs: int, **extra: Any) -> dict:
    metrics = {} if acc is None else {"val_acc": acc, "val_loss": round(1.2 - acc, 4), "train_loss": 0.4}
    result = {} if acc is None else {"mem": {"devices": [], "rss": (500 + 40 * n + iteration) << 20},
                                     "samples_per_s": 900.0 + 100 * n}
    return {"t": T0 + 60 * n + iteration, "type": "trial", "trial_id": f"ab12_0000{n}", "number": n,
            "status": status, "iteration": iteration, "config": {"lr": lr, "batch_size": bs},
            "metrics": metrics, **result, **extra}


def search_events(finished: bool) -> list[dict[str, Any]]:
    """Six trials: two done, one cut by ASHA at iteration 1, one failed, one running, one pending."""
    events: list[dict[str, Any]] = [{"t": T0, "type": "started", "strategy": "tune", "metric": "val_acc",
                                     "mode": "max", "num_samples": 6}]
    for it, acc in enumerate((0.71, 0.88, 0.93), start=1):
        events.append(trial(1, "running" if it < 3 else "terminated", it, acc, 0.031, 64))
    for it, acc in enumerate((0.80, 0.91, 0.95), start=1):
        events.append(trial(2, "running" if it < 3 else "terminated", it, acc, 0.0874, 32))
    events += [trial(3, "running", 1, 0.35, 0.0012, 128), trial(3, "stopped_early", 1, 0.35, 0.0012, 128),
               trial(4, "error", 0, None, 0.2, 64, cause="ValueError: label 12 is outside [0, 10)"),
               trial(5, "running", 1, 0.77, 0.05, 32), trial(6, "pending", 0, None, 0.0031, 128)]
    if finished:
        events.append({"t": T0 + 900, "type": "finished", "best_trial": "ab12_00002",
                       "best_config": {"lr": 0.0874, "batch_size": 32}, "best_val_acc": 0.95})
    return events


def tune_home(home: Path, finished: bool = False) -> Path:
    """A home with one tune run (and a train run, so the runs table has more than the search)."""
    write_run(home, "20240305-121500-small-cnn-digits-c3d4", [{"t": T0 - 60, "type": "started"},
                                                              {"t": T0 - 30, "type": "finished"}])
    run = write_run(home, TUNE, search_events(finished), strategy="single",
                    info={"kind": "tune", "name": "tune-digits"}, epochs=3)
    run.config.write_text(run.config.read_text() + SPACE)
    return home


@pytest.fixture
def running_search(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("TRAINCONSOLE_HOME", str(home))
    return tune_home(home)


@pytest.fixture
def finished_search(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("TRAINCONSOLE_HOME", str(home))
    return tune_home(home, finished=True)


class TestSnapshots:
    def test_leaderboard_narrow(self, snap_compare, running_search: Path) -> None:
        """80x24, plot tab: the trials ranked by val_acc, the best starred, ASHA's cut at 1, the error."""
        assert snap_compare(make_app(running_search), terminal_size=NARROW, run_before=after("2"))

    def test_leaderboard_wide(self, snap_compare, running_search: Path) -> None:
        """120x40: the leaderboard in place of the loss plot; x and t in the footer."""
        assert snap_compare(make_app(running_search), terminal_size=WIDE, run_before=settle)

    def test_demo_search_every_value_at_120x40(self, snap_compare, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
        """120x40, the demo search's four parameters (examples/tune_digits_optuna.toml): every searched
        value of every trial shows in full, the header and the importance line too."""
        home = tmp_path / "home"
        monkeypatch.setenv("TRAINCONSOLE_HOME", str(home))
        space = {"train.lr": 0.0874, "train.batch_size": 128, "train.momentum": 0.8123,
                 "train.weight_decay": 3.1e-5}
        events: list[dict[str, Any]] = [{"t": T0, "type": "started", "strategy": "tune", "metric": "val_acc",
                                         "mode": "max", "num_samples": 4}]
        for n, acc in ((1, 0.91), (2, 0.97), (3, 0.55), (4, 0.88)):
            values = {k: v if k == "train.batch_size" else round(v / n, 5) for k, v in space.items()}
            events.append({**trial(n, "terminated", 3, acc, 0, 0), "config": values})
        write_run(home, TUNE, events, strategy="single", info={"kind": "tune", "name": "tune-digits"},
                  epochs=3)
        assert snap_compare(make_app(home), terminal_size=WIDE, run_before=settle)

    def test_leaderboard_beside_trial_curves(self, snap_compare, running_search: Path) -> None:
        """170 columns: the trials' val_acc curves beside the leaderboard."""
        assert snap_compare(make_app(running_search), terminal_size=HUGE, run_before=settle)


async def test_rows_are_ranked_and_trial_keys_show_only_for_a_tune_run(running_search: Path) -> None:
    app = make_app(running_search)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        board = app.main.query_one(Leaderboard)
        order = [cells[1] for _, cells in board._rows]
        assert order == ["#2", "#1", "#5", "#3", "#4", "#6"]
        assert [cells[2] for _, cells in board._rows][3:5] == ["cut@1", "error"]
        # each trial's peak memory and speed; none yet for the failed and the pending one
        assert [cells[5:7] for _, cells in board._rows] == [
            ("583M", "1.1k"), ("543M", "1.0k"), ("701M", "1.4k"), ("621M", "1.2k"), ("-", "-"), ("-", "-")]
        # the importance of lr and batch size over the three ended trials, computed off the UI thread
        await until(pilot, lambda: str(board.border_subtitle).startswith("importance: "))
        assert "lr " in str(board.border_subtitle) and "batch_size " in str(board.border_subtitle)
        assert app.main.check_action("stop_trial", ()) is True
        await pilot.press("down")  # the train run: no trial keys
        await pilot.pause()
        main = app.main
        assert main.check_action("stop_trial", ()) is False and main.check_action("train_trial", ()) is False


async def test_x_asks_the_driver_to_stop_only_the_trial_under_the_cursor(running_search: Path) -> None:
    app = make_app(running_search)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        board = app.main.query_one(Leaderboard)
        board.move_cursor(row=2)  # trial #5, running
        await pilot.press("x")
        await pilot.pause()
    assert protocol.trial_stops_requested(running_search / "runs" / TUNE) == {"ab12_00005"}


@pytest.mark.slow
async def test_t_on_a_finished_search_trains_the_best_config(finished_search: Path) -> None:
    app = make_app(finished_search)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await pilot.press("t")
        runs_dir = finished_search / "runs"
        new = await until(pilot, lambda: [p for p in runs_dir.iterdir() if "trial2" in p.name], 60, "a run")
    run = protocol.RunDir(new[0])
    config = protocol.load(run.config)
    assert (config["train"]["lr"], config["train"]["batch_size"]) == (0.0874, 32) and "tune" not in config
    assert json.loads(run.info_path.read_text())["kind"] == "train"
    from trainconsole.control import runs

    assert runs.wait(run) == "finished"
    evals = [e for e in protocol.read_all(run.events) if e["type"] == "eval"]
    assert evals and evals[-1]["val_acc"] > 0.5  # it trained: digits, 3 epochs


async def test_the_setup_pane_loads_a_tune_toml_and_launches_a_search(running_search: Path) -> None:
    from trainconsole.console.widgets.run_form import RunForm
    from trainconsole.control import runs

    app = make_app(running_search)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        app.main._load("examples/tune_digits_grid.toml")
        await pilot.pause()
        form = app.main.query_one(RunForm)
        assert form.tune_mode and "tune: grid" in str(form.query_one("#form-source").render())
        config = form.check()
        assert config is not None and config["tune"]["search"] == "grid"
        before = {p.name for p in (running_search / "runs").iterdir()}
        app.main.action_launch()
        new = await until(pilot, lambda: {p.name for p in (running_search / "runs").iterdir()} - before, 20,
                          "a tune run")
    run = protocol.RunDir(running_search / "runs" / new.pop())
    try:
        assert json.loads(run.info_path.read_text())["kind"] == "tune"
        assert "[tune]" in run.config.read_text()
    finally:
        assert runs.kill(run) == []
    assert protocol.run_status(run) == "killed"


async def test_the_cursor_rests_on_the_best_trial_of_a_live_search(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Watched live, #1 leads first and #2 overtakes it: the cursor follows the star (so `t` trains the best),
    until the user moves it, after which it stays on the user's trial."""
    home = tmp_path / "home"
    monkeypatch.setenv("TRAINCONSOLE_HOME", str(home))
    first = [e for e in search_events(False) if e["type"] == "started" or e.get("number") == 1][:2]
    run = write_run(home, TUNE, first, strategy="single", info={"kind": "tune", "name": "tune-digits"})
    app = make_app(home)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        board = app.main.query_one(Leaderboard)
        assert board.selected_trial == "ab12_00001"
        with run.events.open("a") as log:
            for event in search_events(False)[2:]:
                log.write(json.dumps({"v": 1, "run": TUNE, **event}) + "\n")
        await until(pilot, lambda: len(board._rows) == 6, 20, "six trials")
        assert board.selected_trial == "ab12_00002" and board._rows[0][1][0] == "★"
        assert app.main.chosen_trial(app.board.runs[TUNE].search).number == 2  # what `t` trains
        board.move_cursor(row=2)  # the user picks #5; a new result re-ranks the board
        await pilot.pause()
        with run.events.open("a") as log:
            log.write(json.dumps({"v": 1, "run": TUNE, **trial(5, "running", 2, 0.99, 0.05, 32)}) + "\n")
        await until(pilot, lambda: board._rows[0][0] == "ab12_00005", 20, "#5 on top")
        assert board.selected_trial == "ab12_00005"


async def test_a_search_is_marked_with_space_acted_on_with_the_others_but_not_overlaid(
        finished_search: Path) -> None:
    """Space marks a tune run as any run (s k r and delete take it with the others), though the footer
    leaves `space Mark` out beside x and t; the loss plot overlays only the marked runs that have a loss of
    their own."""
    from trainconsole.console.screens.confirm_screen import ConfirmScreen
    from trainconsole.console.widgets.loss_plot import LossPlot
    from trainconsole.console.widgets.runs_table import RunsTable

    app = make_app(finished_search)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        table = app.main.query_one(RunsTable)
        table.select(TUNE)
        await pilot.pause()
        assert app.main.check_action("mark_search", ()) is True and not app.main.check_action("mark", ())
        await pilot.press("space", "down", "space")
        await pilot.pause()
        other = app.main.selection.selected
        assert other != TUNE and app.main.selection.marked == [TUNE, other]
        app.main.frames.draw_plot()
        plot = app.main.query_one(LossPlot)
        title = str(plot.border_title)
        assert title.startswith("loss: small-cnn-digits") and "more" not in title  # (not "+1 more")
        await pilot.press("delete")
        assert isinstance(app.screen, ConfirmScreen) and "2 runs" in str(app.screen.question)
        await pilot.press("y")
        await until(pilot, lambda: not list((finished_search / "runs").iterdir()), 10, "both runs to go")
    assert {p.name for p in (finished_search / "trash").iterdir()} == {TUNE, other}
