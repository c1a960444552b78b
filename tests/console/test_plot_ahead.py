"""The plot's figure built ahead (issue 47): with a terminal, plotext builds the figure of new lines in a
thread and the figure is swapped in once built. It must draw exactly what the plot draws on the UI thread,
titles and legend included, and plotext must not build it on the UI thread."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from conftest import RUNNING, make_app, until
from rich.segment import Segment
from textual.geometry import Region
from textual_plotext.plot import Plot

from trainconsole.console.screens import frames
from trainconsole.console.widgets.loss_plot import LossPlot


def drawn(plot: LossPlot) -> list[list[Segment]]:
    """The plot's lines as the screen gets them (border, titles and figure), segment by segment."""
    return [list(strip) for strip in plot.render_lines(Region(0, 0, plot.size.width, plot.size.height))]


async def test_a_figure_built_ahead_draws_what_the_ui_thread_draws(fixture_home: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    builders: list[threading.Thread] = []
    build = Plot.build

    def recorded(self: Plot) -> str:
        builders.append(threading.current_thread())
        return build(self)

    monkeypatch.setattr(Plot, "build", recorded)
    app = make_app(fixture_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.dashboard and app.main.query_one(LossPlot), 20, "the dashboard")
        plot = app.main.query_one(LossPlot)
        await until(pilot, lambda: app.loaded and any(line.run_id == RUNNING for line in plot.lines), 20,
                    "the first plot")
        app.tailer.stop()  # (nothing else redraws the plot meanwhile)
        await pilot.pause(0.3)
        assert not plot.ahead  # (a headless app draws on the UI thread: the snapshots' own way)
        lines, title, legend = plot.lines, plot.border_title, plot.border_subtitle
        at_once = drawn(plot)
        assert legend and any("train" in line.kind for line in lines)

        plot.show([], "nothing", "no data yet")  # something else on screen, drawn at once
        assert plot.border_title == "nothing" and drawn(plot) != at_once
        plot.ahead, builders[:] = True, []
        plot.show(lines, title)
        assert plot.border_title == "nothing"  # (the titles change with the figure, once it is built)
        await until(pilot, lambda: plot.border_title == title, 10, "the figure built ahead")
        await pilot.pause(0.1)
        assert drawn(plot) == at_once
        assert (plot.border_title, plot.border_subtitle) == (title, legend)
        assert builders and threading.main_thread() not in builders


async def test_lines_that_came_while_a_figure_was_built_are_what_shows(
        fixture_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build, ahead = Plot.build, []

    def slow_first(self: Plot) -> str:  # the older figure is built last
        if threading.current_thread() is not threading.main_thread():
            ahead.append(self)
            if ahead[0] is self:
                time.sleep(0.5)
        return build(self)

    monkeypatch.setattr(Plot, "build", slow_first)
    monkeypatch.setattr(frames, "PLOT_S", 3600.0)  # (only the test redraws the plot once it is drawn)
    app = make_app(fixture_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.dashboard and app.main.query_one(LossPlot), 20, "the dashboard")
        plot = app.main.query_one(LossPlot)
        await until(pilot, lambda: app.loaded and any(line.run_id == RUNNING for line in plot.lines), 20,
                    "the first plot")
        app.tailer.stop()
        await pilot.pause(0.3)
        lines, title = plot.lines, plot.border_title
        at_once = drawn(plot)
        plot.show([], "nothing", "no data yet")
        plot.ahead = True
        plot.show(lines[:1], "older")  # its figure is still being built when newer lines come
        plot.show(lines, title)
        await until(pilot, lambda: plot.border_title == title, 10, "the newer figure")
        await until(pilot, lambda: len(ahead) == 2, 10, "both figures built")
        await pilot.pause(0.8)  # (the older one, built last, would be on screen by now)
        assert plot.border_title == title and drawn(plot) == at_once
