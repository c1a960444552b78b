"""Frames: what the tailer read goes into the board, and at a few frames a second onto the dashboard.

A mixin of the app (like `run_actions`): the table, log and memory in one frame, the plot (the costliest
pane) in its own, slower one, and nothing drawn when nothing changed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual.widgets import DataTable

from console.core import leaderboard
from console.core.state import Board, build_view, plot_view, weights_view
from console.services.tailer import RunsRead, Tailer
from console.widgets.leaderboard import Leaderboard
from console.widgets.runs_table import RunsTable

if TYPE_CHECKING:
    from console.screens.main_screen import MainScreen
    from console.services import gpu

FRAME_S = 0.1  # at most 10 frames a second, and none when nothing changed
PLOT_S = 0.5  # the plot (the costliest pane) at most twice a second


class Frames:
    """Draws the board for the app (which provides the attributes below)."""

    board: Board
    tailer: Tailer
    clock: Callable[[], float]
    main: MainScreen
    dashboard: bool
    loaded: bool
    selected: str | None
    marked: list[str]
    ranking: str
    weights_on: bool
    layer: str | None
    devices: gpu.Devices | None
    _leaders: dict[str, tuple[int | None, float | None]]
    _force: set[str]
    _frame_timer: object | None
    _last_frame: float
    _plot_next: float
    _plot_scheduled: bool
    _select_next: str | None
    _labels: dict[str, str]
    _importance_key: tuple[str | None, int] | None = None  # the search and ended trials last computed

    def on_runs_read(self, message: RunsRead) -> None:
        """The tailer read something: take it into the board, let it read on, draw it in the next frame."""
        for update in message.updates.values():
            self.board.take(update)
        self.tailer.taken()
        self.loaded = self.loaded or message.loaded
        live = [r for r in self.board.runs.values() if r.status == "running"]
        self._leaders = {r.id: (r.pid, r.pid_started) for r in live}  # a new dict: the sampler's to read
        self._schedule_frame()

    def _tick(self) -> None:
        for run in self.board.runs.values():
            if run.status == "running":
                self.board.mark(run.id)  # elapsed time moves on
        self._schedule_frame()

    def _schedule_frame(self) -> None:
        if self._frame_timer is None:
            wait = max(0.01, self._last_frame + FRAME_S - time.monotonic())
            self._frame_timer = self.set_timer(wait, self.draw_frame)

    def _drawable(self) -> bool:
        """Whether the dashboard is up (not closing down, nor still opening: it redraws then)."""
        return bool(self.screen_stack and self.dashboard)

    def draw_frame(self) -> None:
        """Put what changed since the last frame on screen (normally at most every FRAME_S)."""
        self._frame_timer, self._last_frame = None, time.monotonic()
        if not self._drawable():
            return
        changed = self.board.take_dirty() | self._force
        view = build_view(self.board, self.clock(), self.selected, self.marked, self.ranking, changed)
        self._force = set()
        if view.selected != self.selected:
            self.refresh_bindings()
        self.selected, self._labels = view.selected, view.labels
        self.main.show_view(view)
        if view.trials is not None:
            self._refresh_importance(view.trials.ended)
        if self.devices is not None:
            self.main.show_devices(self.devices, view.labels)
        if self._select_next in view.labels:
            self.main.query_one(RunsTable).select(self._select_next)
            self._select_next = None
        if view.plot_changed:
            self._schedule_plot()

    def _refresh_importance(self, ended: list[tuple[dict[str, Any], float]]) -> None:
        """Recompute the parameter importance in a thread when a trial of the shown search has ended."""
        key = (self.selected, len(ended))
        if key == self._importance_key:
            return
        self._importance_key = key

        def compute() -> None:
            text = leaderboard.importance_line(ended)
            self.call_from_thread(self._show_importance, key, text)

        self.run_worker(compute, thread=True, group="importance", exclusive=True)

    def _show_importance(self, key: tuple[str | None, int], text: str) -> None:
        if key == self._importance_key and self._drawable():
            self.main.query_one(Leaderboard).show_importance(text)

    def _schedule_plot(self) -> None:
        # Half a frame after the table, so the plot's render never delays the table's frame.
        if not self._plot_scheduled:
            self._plot_scheduled = True
            wait = max(FRAME_S / 2, self._plot_next - time.monotonic())
            self.set_timer(wait, self.draw_plot)

    def draw_plot(self) -> None:
        """Redraw the plot from the selected and overlaid runs' histories (at most every PLOT_S)."""
        self._plot_scheduled, self._plot_next = False, time.monotonic() + PLOT_S
        if not self._drawable():
            return
        main = self.main
        if self._showing_weights():
            history, title, self.layer = weights_view(self.board, self.selected, self.layer)
            main.show_weights(history, title, on=True)
            return
        main.show_weights([], "", on=False)
        lines, title = plot_view(self.board, self.selected, self.marked, max(20, main.plot_width))
        main.show_plot(lines, title, bool(self._labels))

    def _showing_weights(self) -> bool:
        run = self.board.runs.get(self.selected or "")
        return self.weights_on and not (run is not None and run.kind == "tune")  # a search: its trials

    def _redraw_selection(self) -> None:
        self._force.add("*")
        self._plot_next = 0.0  # the user asked for it: no waiting
        self._schedule_frame()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """The cursor moved: the plot, log and memory follow the selected run."""
        run_id = event.row_key.value
        if isinstance(event.data_table, RunsTable) and run_id != self.selected:
            self.selected = run_id
            if self.screen_stack:  # (a highlight can still arrive while the app closes down)
                self.refresh_bindings()  # the trial keys show only for a tune run
                self._redraw_selection()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter on a run: show its plot when panes are tabs."""
        if isinstance(event.data_table, RunsTable) and self.main.narrow:
            self.main.show_pane("plot")
