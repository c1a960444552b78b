"""Frames: the board, at a few frames a second, onto the dashboard.

The dashboard owns one `Frames`: the table, log and memory in one frame, the plot (the costliest pane)
in its own, slower one, and nothing drawn when nothing changed. It is given what it draws from (the
app's board, which the tailer's updates go into; the dashboard's `Selection`; the clock), the screen
whose timers and workers it runs on (a `Host`), and, once they are composed, the `Panes` it draws into.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from trainconsole.console.core import leaderboard
from trainconsole.console.core.board import build_view, plot_view, rank, weights_view

if TYPE_CHECKING:
    from textual.app import App
    from textual.timer import Timer

    from trainconsole.console.core.board import Board
    from trainconsole.console.core.selection import Selection
    from trainconsole.console.screens.feeds import Feeds
    from trainconsole.console.screens.panes import Panes

#: At most 40 frames a second, and none when nothing changed: a frame that is due is drawn at once
#: (benchmarks/console_live.py: 0.05 -> 0.03 took the lag's p99 from ~66 to ~52 ms at 20 runs x 500
#: events/s, ~68 to ~41 ms at 25 events/s, for 0-3 more points of a core). The tailer reads every 30 ms
#: (tailer.POLL_S) and each read's frame is drawn as it is taken: a little less here, so that a read that
#: comes a millisecond early is not put on a timer (which waited ~10 ms more), issue 47.
FRAME_S = 0.025
#: The clock's tick (elapsed times) is drawn with the next read's frame, or after this long without one: a
#: frame of its own just before a read put that read's frame FRAME_S behind it.
TICK_S = 0.05
PLOT_S = 0.5  # the plot (the costliest pane) about twice a second
PLOT_AFTER_S = FRAME_S / 4  # after the frame's own render


class Host(Protocol):
    """What frames run on: the dashboard's app, timers and workers, and its bindings (each as the screen's
    own)."""

    app: App[Any]

    def refresh_bindings(self) -> None: ...
    def set_timer(self, delay: float, callback: Callable[[], Any]) -> Timer: ...
    def run_worker(self, work: Callable[[], Any], **options: Any) -> Any: ...


class Frames:
    """Draws a board, as a selection shows it, into one dashboard's panes."""

    def __init__(self, screen: Host, board: Board, selection: Selection,
                 clock: Callable[[], float], feeds: Feeds) -> None:
        self.screen, self.board, self.selection, self.clock = screen, board, selection, clock
        self.feeds = feeds
        self.panes: Panes | None = None  # (given once the dashboard has composed them)
        self.labels: dict[str, str] = {}  # run id -> its label in the table (for the memory bars)
        self.select_next: str | None = None  # a run to put the cursor on once its row is drawn
        self._force: set[str] = {"*"}
        self._frame_timer: object | None = None
        self._tick_timer: Timer | None = None  # the clock tick's frame, unless a read's comes first
        self._last_frame = self._plot_next = 0.0
        self._plot_timer: Timer | None = None  # the plot's next drawing
        self._plot_aligned = False  # (that timer is just after a frame, not at the plot's time)
        self._plotted: tuple[int, ...] = ()  # the plotted runs' states the plot was last drawn from (ids)
        self._importance_key: tuple[str | None, int] | None = None  # the search and ended trials computed
        self.keys_for: tuple[str | None, bool, bool] | None = None  # what the selection fits (None: no frame)

    def schedule(self) -> None:
        """Draw what changed: at once (once the handler that asked returns) if the last frame began at least
        FRAME_S ago, else when it will have."""
        if self.keys_for is None:  # before the first frame (the dashboard's first paint comes first)
            self._want_first()
        if self._frame_timer is None:
            wait = self._last_frame + FRAME_S - time.monotonic()
            if wait <= 0:  # (a timer, even of 0 s, waited ~10 ms more: the lag's p99, console_live.py)
                self._frame_timer = True
                self.screen.app.call_later(self.draw_frame)
            else:
                self._frame_timer = self.screen.set_timer(wait, self.draw_frame)

    def schedule_soon(self) -> None:
        """Draw what changed with the next frame, or in TICK_S if none comes by then (the clock's tick)."""
        if self._frame_timer is None and self._tick_timer is None:
            self._tick_timer = self.screen.set_timer(TICK_S, self._tick_due)

    def _tick_due(self) -> None:
        self._tick_timer = None
        self.schedule()

    def redraw(self) -> None:
        """The user changed what is shown: redraw everything, the plot without waiting."""
        self._force.add("*")
        self._plot_next = 0.0
        self.schedule()

    def want_histories(self, board: Board, run_ids: list[str | None]) -> bool:
        """Have the tailer read the logs of these runs whose rows came from the run index (their plots,
        logs, compare); returns whether any still waits for its history."""
        waiting = [i for i in run_ids if i in board.runs and board.runs[i].summarized]
        if waiting:
            self.feeds.tailer.want(waiting)
        return bool(waiting)

    def _want_first(self) -> None:
        """Have the tailer read the history of the run the first frame will select (and of those marked)
        now, not once that frame is drawn: a summarized run's plot comes ~0.1-0.2 s sooner (issue 47)."""
        board, sel = self.board, self.selection
        first = sel.selected if sel.selected in board.runs else next(
            (r.id for r in rank(board.runs.values(), sel.ranking)), None)
        self.want_histories(board, [first, *sel.marked])

    def _drawable(self) -> Panes | None:
        """The panes, while the dashboard is up (not closing down, nor still opening: it redraws then)."""
        app = self.screen.app  # (not running: it is shutting down, removing the panes)
        up = app.is_running and app.screen_stack and self.feeds.dashboard
        return self.panes if up else None

    def draw_frame(self) -> None:
        """Put what changed since the last frame on screen (normally at most every FRAME_S)."""
        self._frame_timer, self._last_frame = None, time.monotonic()
        if self._tick_timer is not None:  # (this frame draws what the tick changed)
            self._tick_timer.stop()
            self._tick_timer = None
        panes = self._drawable()
        if panes is None:
            return
        sel, board = self.selection, self.board
        changed = board.take_dirty() | self._force
        view = build_view(board, self.clock(), sel.selected, sel.marked, sel.ranking, changed)
        self._force = set()
        sel.selected, self.labels = view.selected, view.labels
        self.want_histories(board, [sel.selected, *sel.marked])
        run = board.runs.get(sel.selected or "")  # its kind, and its metrics, may come after its row
        keys_for = (sel.selected, sel.is_tune(board), bool(run and run.metrics))
        if keys_for != self.keys_for:
            self.keys_for = keys_for
            self.screen.refresh_bindings()  # the trial keys show only for a tune run
        panes.show_view(view, board.runs, self.clock())
        if view.trials is not None:
            self._refresh_importance(view.trials.ended)
        self.draw_devices()
        if self.select_next in view.labels:
            panes.table.select(self.select_next)
            self.select_next = None
        if view.plot_changed:
            if self._plot_states() != self._plotted:  # a run's state first came or was replaced (its whole
                self._plot_next = 0.0  # history handed over): plotted just after this frame, not at its pace
            self._schedule_plot()

    def _plot_states(self) -> tuple[int, ...]:
        """Which states the plot would draw now: the selected and overlaid runs' (their ids)."""
        runs, sel = self.board.runs, self.selection
        return tuple(id(runs.get(i or "")) for i in (sel.selected, *sel.marked))

    def draw_devices(self) -> None:
        """Draw the app's latest device sample (if any), with the runs' labels as the table shows them."""
        devices = self.feeds.devices
        if devices is not None and self.panes is not None:  # with other hosts' devices (issue 37)
            self.panes.show_devices(devices, self.feeds.other_hosts, self.labels, self.clock())

    def _refresh_importance(self, ended: list[tuple[dict[str, Any], float]]) -> None:
        """Recompute the parameter importance in a thread when a trial of the shown search has ended."""
        key = (self.selection.selected, len(ended))
        if key == self._importance_key:
            return
        self._importance_key = key

        def compute() -> None:
            text = leaderboard.importance_line(ended)
            self.screen.app.call_from_thread(self._show_importance, key, text)

        self.screen.run_worker(compute, thread=True, group="importance", exclusive=True)

    def _show_importance(self, key: tuple[str | None, int], text: str) -> None:
        panes = self._drawable()
        if key == self._importance_key and panes is not None:
            panes.leaderboard.show_importance(text)

    def _schedule_plot(self) -> None:
        """Draw the plot PLOT_AFTER_S after this frame if it is due by the next one, else once it is due
        (a later frame may move it to just after itself). Its build and render (~25 ms, the costliest pane;
        with a terminal the figure is built in a thread, and ~6 ms of Textual's strips are left here) then
        end before the next frame is due: begun at any other moment, they held that frame up."""
        due = self._plot_next - time.monotonic()
        if self._plot_timer is not None:
            if self._plot_aligned or due > FRAME_S:
                return
            self._plot_timer.stop()  # (waiting for its time: now due by the next frame)
        self._plot_aligned = due <= FRAME_S
        wait = PLOT_AFTER_S if self._plot_aligned else due
        self._plot_timer = self.screen.set_timer(wait, self.draw_plot)

    def draw_plot(self) -> None:
        """Redraw the plot from the selected and overlaid runs' histories (at most every PLOT_S or so)."""
        self._plot_timer, self._plot_next = None, time.monotonic() + PLOT_S
        self._plotted = self._plot_states()
        panes = self._drawable()
        if panes is None:
            return
        sel, board = self.selection, self.board
        if sel.showing_weights(board):
            history, title, sel.layer = weights_view(board, sel.selected, sel.layer)
            panes.show_weights(history, title, on=True)
            return
        panes.show_weights([], "", on=False)
        lines, title = plot_view(board, sel.selected, sel.marked, max(20, panes.plot_width))
        panes.show_plot(lines, title, bool(self.labels))
