"""A cell shows its whole figure or an honest short form of it (`327/2k`, `3.3e-5`), never a cut one: the
formatting (any value, any width: the text fits and parses back to the value within its shown precision),
the console's table at 80x24 (columns as wide as their widest value shown), and `ls`."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import T0, make_app, settle, write_run
from hypothesis import given
from hypothesis import strategies as st
from textual.app import App, ComposeResult
from textual.widgets.data_table import ColumnKey

from trainconsole.console.core.figures import SUFFIXES, count, figure, fraction
from trainconsole.console.core.leaderboard import ITER_WIDTH, METRIC_WIDTH, Search, rows
from trainconsole.console.widgets.runs_table import RunsTable

EXE = str(Path(sys.executable).parent / "trainconsole")
SCALES = dict(SUFFIXES)
finite = st.floats(-1e300, 1e300)  # (a float near the largest rounds up to inf when parsed)


def parsed(text: str) -> tuple[float, float]:
    """A shown figure's value and half its last digit's unit (`3.27e-5`: 3.27e-5 and 0.005e-5)."""
    scale = SCALES.get(text[-1], 1.0)
    text = text.rstrip("kMGT").replace(",", "")
    mantissa, _, exponent = text.partition("e")
    decimals = len(mantissa.partition(".")[2])
    unit = 10.0 ** (int(exponent or 0) - decimals) * scale
    return float(text) * scale, unit / 2


def assert_honest(text: str, value: float) -> None:
    shown, half = parsed(text)
    assert abs(shown - value) <= half * (1 + 1e-9) + abs(value) * 1e-12, (text, value)


@given(finite, st.integers(7, 12), st.sampled_from([".4g", ".3f", ".3g"]))
def test_a_figure_fits_its_width_and_parses_back_within_its_precision(value: float, width: int,
                                                                      fmt: str) -> None:
    text = figure(value, width, fmt)
    assert len(text) <= width, (text, width)
    assert_honest(text, value)


@given(st.floats(0, 1e14), st.integers(4, 9))
def test_a_count_fits_its_width_and_parses_back_within_its_precision(value: float, width: int) -> None:
    text = count(value, width)
    assert len(text) <= width, (text, width)
    assert_honest(text, value)


@given(st.integers(0, 10**11), st.integers(0, 10**11), st.integers(9, 12))  # (the epoch cell's 9 and more)
def test_an_epoch_fits_its_width_and_each_side_parses_back(done: int, total: int, width: int) -> None:
    text = fraction(done, total, width)
    assert len(text) <= width, (text, width)
    left, right = text.split("/")
    assert_honest(left, done)
    assert_honest(right, total)
    assert fraction(done, None, width) == str(done) or len(fraction(done, None, width)) <= width


def test_the_figures_of_the_report_are_whole_or_short_never_cut() -> None:
    assert fraction(327, 2000, 9) == "327/2000"
    assert fraction(327, 2000, 7) == "327/2k"
    assert figure(3.269e-05, 7) == "3.27e-5"
    assert count(123_456, 6) == "123k"


def test_a_leaderboard_row_shows_a_small_loss_and_a_long_trial_short_not_cut() -> None:
    search = Search("val_loss", "min")
    search.apply({"type": "trial", "t": 1.0, "trial_id": "a", "number": 1, "status": "running",
                  "iteration": 1234, "config": {"lr": 0.01}, "metrics": {"val_loss": 3.269e-05}})
    (_, cells), = rows(search)
    assert (cells[3], cells[4]) == ("1k", "3.27e-5")
    assert len(cells[3]) <= ITER_WIDTH and len(cells[4]) <= METRIC_WIDTH


def table_text(app) -> str:  # type: ignore[no-untyped-def]
    table = app.main.query_one(RunsTable)
    return "\n".join("".join(s.text for s in table.render_line(y)) for y in range(table.size.height))


def long_run(home: Path) -> str:
    """A run at epoch 327 of 2000 with a loss of 3.269e-05 and 123,456 samples/s."""
    run_id = "20240305-101500-small-cnn-digits-0b0b"
    events = [{"t": T0, "type": "started", "strategy": "single", "world_size": 1, "devices": ["cpu"]},
              {"t": T0 + 5, "type": "step", "step": 9000, "epoch": 327, "loss": 3.269e-05, "count": 10,
               "lr": 0.05, "samples_per_s": 123_456.0}]
    write_run(home, run_id, events, epochs=2000)
    return run_id


async def test_the_table_at_80x24_shows_the_epoch_and_loss_whole(tmp_path: Path) -> None:
    home = tmp_path / "home"
    long_run(home)
    app = make_app(home)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        text = table_text(app)
        assert re.search(r"\b327/2000\b", text), text
        assert re.search(r"\b3\.3e-5\b", text), text
        assert re.search(r"\b123k\b", text), text


def test_ls_shows_a_small_loss_as_a_figure_not_zeros(tmp_path: Path) -> None:
    home = tmp_path / "home"
    long_run(home)
    out = subprocess.run([EXE, "ls"], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "TRAINCONSOLE_HOME": str(home)})
    assert out.returncode == 0, out.stderr
    line = next(line for line in out.stdout.splitlines() if "0b0b" in line)
    assert "327/2000" in line and re.search(r"\b3\.269e-05\b", line), line


class TableApp(App[None]):
    def compose(self) -> ComposeResult:
        yield RunsTable(id="runs")


def cells(epoch: str, status: str = "running") -> tuple[str, ...]:
    return ("digits", status, "single", epoch, "0.1", "0.9", "2,000", "1m00s")


async def test_a_column_widens_to_its_widest_value_shown_and_back() -> None:
    app = TableApp()
    async with app.run_test(size=(100, 12)) as pilot:
        table = app.query_one(RunsTable)

        def widths() -> dict[str, int | None]:
            return {key: table.columns[ColumnKey(key)].width for key in ("epoch", "status")}

        table.update_rows([("a", cells("5/10")), ("b", cells("1/3"))])
        await pilot.pause()
        assert widths() == {"epoch": 7, "status": 8}
        table.update_rows([("a", cells("327/2000")), ("b", cells("1/3", "paused: disk full"))])
        await pilot.pause()
        assert widths() == {"epoch": 8, "status": 17}
        assert "327/2000" in "".join(s.text for s in table.render_line(1))
        table.update_rows([("a", cells("6/10")), ("b", cells("1/3"))])  # the same rows: back
        await pilot.pause()
        assert widths() == {"epoch": 7, "status": 8}
        table.update_rows([("b", cells("1/3")), ("a", cells("327/2000"))])  # a new order
        await pilot.pause()
        assert widths() == {"epoch": 8, "status": 8}
