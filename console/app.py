"""`trainconsole`: the Textual console. Wires the screen, the keys, the tailer thread and the workers.

Never imports torch, torchvision or ray (runs are separate, detached processes), so it opens at once.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import work
from textual.app import App
from textual.binding import Binding
from textual.widgets import DataTable
from textual.worker import Worker, WorkerState, get_current_worker

from console import hangup
from console.core.state import RANKINGS, Board, build_view, plot_view, weights_view
from console.run_actions import RunActions
from console.screens.help_screen import HelpScreen
from console.screens.start_screen import StartScreen
from console.services.tailer import RunsRead, Tailer
from console.widgets.runs_table import RunsTable
from trainers import protocol

if TYPE_CHECKING:
    from console.screens.main_screen import MainScreen
    from console.services import gpu

FRAME_S = 0.1  # at most 10 frames a second, and none when nothing changed
PLOT_S = 0.5  # the plot (the costliest pane) at most twice a second
DEVICES_S = 0.5  # NVML at 2 Hz
DEMO = Path("examples/digits.toml")


class TrainConsole(RunActions, App[None]):
    """Set up, launch, watch, stop and kill training runs."""

    CSS_PATH = "app.tcss"
    ENABLE_COMMAND_PALETTE = False
    TITLE = "trainconsole"
    BINDINGS = [
        Binding("l,f5", "launch", "Launch"),
        Binding("s", "stop", "Stop"),
        Binding("k", "kill", "Kill"),
        Binding("r", "resume", "Resume"),
        Binding("x", "stop_trial", "Stop trial", tooltip="Stop the selected trial (the search goes on)"),
        Binding("t", "train_trial", "Train", tooltip="Train the selected (else best) trial's config"),
        Binding("space", "mark", "Overlay"),
        Binding("h", "weights", "Weights", tooltip="The selected run's weight histograms by epoch (h: back)"),
        Binding("right_square_bracket", "layer(1)", "Layer", key_display="[ ]",
                tooltip="Weights: ] the next layer, [ the one before"),
        Binding("left_square_bracket", "layer(-1)", "Weights: the layer before", key_display="[", show=False),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("q", "quit", "Quit"),
        Binding("b", "rank", "Sort: newest / best val acc", show=False),
    ]

    def __init__(self, home: Path | None = None, sampler: gpu.Sampler | None = None,
                 clock: Callable[[], float] = time.time, config_path: Path | None = None) -> None:
        # NO_COLOR: with native ANSI colours Textual drops colour entirely (else it only greys it out).
        super().__init__(ansi_color=True if "NO_COLOR" in os.environ else None)
        self.home = home or protocol.home()
        (self.home / "runs").mkdir(mode=0o700, parents=True, exist_ok=True)
        self.sampler = sampler  # None: NVML, set up with the dashboard (not for the first frame)
        self.clock = clock
        self.board = Board()  # the app's own: the tailer thread hands it updates in RunsRead messages
        self.tailer = Tailer(self.home, self.post_message, on_error=self._tailer_failed)
        self.loaded = False  # every run's history has been read and taken into the board
        self._leaders: dict[str, tuple[int | None, float | None]] = {}  # handed to the device sampler
        self.selected: str | None = None
        self.marked: list[str] = []
        self.ranking = RANKINGS[0]
        self.weights_on = False  # h: the weights view in the plot's place
        self.layer: str | None = None  # the layer the weights view shows
        self.config_path = str(config_path or DEMO)
        self._force: set[str] = {"*"}
        self._frame_timer: object | None = None
        self._last_frame = self._plot_next = 0.0
        self._plot_scheduled = False
        self._select_next: str | None = None
        self._labels: dict[str, str] = {}
        self.devices: gpu.Devices | None = None
        self._stopping = threading.Event()
        self.goodbye = ""
        self.dashboard = False  # the dashboard has replaced the first frame's StartScreen

    def get_default_screen(self) -> StartScreen:
        """The first frame: the runs pane and the keys, as cheap as a minimal app (the dashboard follows)."""
        return StartScreen()

    async def open_dashboard(self) -> None:
        """After the first frame (StartScreen calls it): the dashboard, its form filled from the demo."""
        from console.screens.main_screen import MainScreen  # with it plotext, the form's checks...

        try:
            config, source = protocol.load(self.config_path), self.config_path
        except protocol.ConfigError:
            config, source = protocol.defaults(), "built-in defaults (the digits demo)"
        self.add_mode("dashboard", lambda: MainScreen(config, source, self.config_path))
        await self.switch_mode("dashboard")  # its own screen stack: dialogs go over the dashboard
        self.dashboard = True
        self.refresh_bindings()
        self.tailer.start()  # reading runs and sampling devices wait too: the first frame has the CPU
        self.sample_devices()
        self._redraw_selection()

    @property
    def main(self) -> MainScreen:
        """The dashboard screen (also while a dialog is over it)."""
        return self.screen_stack[0]  # type: ignore[return-value]

    def on_mount(self) -> None:
        """Quit if the terminal goes; runs are read and devices sampled once the dashboard is open."""
        hangup.watch(self)
        self.set_interval(1.0, self._tick)

    def on_unmount(self) -> None:
        """Stop the threads (the runs themselves go on)."""
        self._stopping.set()
        self.tailer.stop()

    # -- frames -------------------------------------------------------------------------------------

    def _tailer_failed(self, text: str) -> None:
        try:
            self.call_from_thread(self.notify, text, severity="error", timeout=8)
        except RuntimeError:  # the app is closing
            pass

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

    def draw_frame(self) -> None:
        """Put what changed since the last frame on screen (normally at most every FRAME_S)."""
        self._frame_timer, self._last_frame = None, time.monotonic()
        if not (self.screen_stack and self.dashboard):  # closing down, or opening (it redraws then)
            return
        main = self.main
        changed = self.board.take_dirty() | self._force
        view = build_view(self.board, self.clock(), self.selected, self.marked, self.ranking, changed)
        self._force = set()
        if view.selected != self.selected:
            self.refresh_bindings()
        self.selected, self._labels = view.selected, view.labels
        main.show_view(view)
        if self.devices is not None:
            main.show_devices(self.devices, view.labels)
        if self._select_next in view.labels:
            main.query_one(RunsTable).select(self._select_next)
            self._select_next = None
        if view.plot_changed:
            self._schedule_plot()

    def _schedule_plot(self) -> None:
        # Half a frame after the table, so the plot's render never delays the table's frame.
        if not self._plot_scheduled:
            self._plot_scheduled = True
            self.set_timer(max(FRAME_S / 2, self._plot_next - time.monotonic()), self.draw_plot)

    def draw_plot(self) -> None:
        """Redraw the plot from the selected and overlaid runs' histories (at most every PLOT_S)."""
        self._plot_scheduled, self._plot_next = False, time.monotonic() + PLOT_S
        if not (self.screen_stack and self.dashboard):
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

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Keys that fit the selection: x and t for a tune run; h (and space) for other runs; [ ] in the
        weights view."""
        if not self.dashboard and action != "quit":
            return None  # shown dimmed on the first frame, until the dashboard opens (a fraction of a second)
        run = self.board.runs.get(self.selected or "")
        tune = run is not None and run.kind == "tune"
        if action in ("stop_trial", "train_trial"):
            return tune
        if action == "weights":  # a tune run's plot is its trials' curves
            return not tune
        if action == "mark":  # overlaid runs are drawn on the loss plot, not in the weights view
            return not (tune or self.weights_on)
        if action == "layer":
            return self.weights_on and not tune
        return True

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter on a run: show its plot when panes are tabs."""
        if isinstance(event.data_table, RunsTable) and self.main.narrow:
            self.main.show_pane("plot")

    # -- devices ------------------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="devices", exit_on_error=False)
    def sample_devices(self) -> None:
        """Sample device memory at <= 2 Hz in a thread (NVML calls can block)."""
        from console.services import gpu  # psutil, and NVML when there is a GPU

        worker = get_current_worker()
        sampler = self.sampler = self.sampler or gpu.NvmlSampler()
        while not (worker.is_cancelled or self._stopping.is_set()):
            try:
                devices = sampler.sample(gpu.families(self._leaders))
            except Exception as e:  # a sampler failure is shown in the pane; sampling goes on
                devices = gpu.Devices(note=f"device sampling failed: {type(e).__name__}: {e}")
            if worker.is_cancelled or self._stopping.is_set():
                return
            self.call_from_thread(self._show_devices, devices)
            self._stopping.wait(DEVICES_S)

    def _show_devices(self, devices: gpu.Devices) -> None:
        self.devices = devices
        if self.screen_stack and self.dashboard:
            self.main.show_devices(devices, self._labels)

    # -- actions ------------------------------------------------------------------------------------

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A failed action is shown, never fatal."""
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.notify(f"{event.worker.name}: {event.worker.error}", severity="error", timeout=8)

    def action_mark(self) -> None:
        """Overlay the selected run on the plot (or take it off)."""
        self.selected = self._cursor_run()
        if self.selected is None:
            return
        if self.selected in self.marked:
            self.marked.remove(self.selected)
        else:
            self.marked.append(self.selected)
        self._redraw_selection()

    def action_weights(self) -> None:
        """Show the selected run's weight histograms in the plot's place, or the loss plot again."""
        self.weights_on = not self.weights_on
        self.refresh_bindings()  # [ and ] show only in the weights view
        self._redraw_selection()
        if self.main.narrow:
            self.main.show_pane("plot")

    def action_layer(self, move: int) -> None:
        """The weights view: show the previous or next layer."""
        _, _, self.layer = weights_view(self.board, self.selected, self.layer, move)
        self._redraw_selection()

    def action_rank(self) -> None:
        """Order runs newest first, or by best validation accuracy."""
        self.ranking = RANKINGS[(RANKINGS.index(self.ranking) + 1) % len(RANKINGS)]
        self.notify(f"runs sorted by {self.ranking}")
        self._redraw_selection()

    def action_help(self) -> None:
        """Every key and what it does."""
        from console.screens.main_screen import MainScreen

        bindings = [b for b in [*self.BINDINGS, *MainScreen.BINDINGS] if isinstance(b, Binding)]
        keys = [(b.key_display or b.key.replace(",", " "), b.tooltip or b.description) for b in bindings]
        keys += [("↑ ↓ pgup pgdn", "Move the selection in the runs pane"),
                 ("enter", "In the runs pane: show the run's plot; in the form: launch")]
        self.push_screen(HelpScreen(keys))

    async def action_quit(self) -> None:
        """Quit; the runs keep going."""
        running = sum(r.status == "running" for r in self.board.runs.values())
        self.goodbye = (f"trainconsole: closed. {running} run(s) keep going in the background; "
                        "`trainconsole` reattaches, `trainconsole ls` lists them.")
        self.exit()

    def run(self, *args: Any, **kwargs: Any) -> Any:
        """Run the console; on quitting, say (on the restored terminal) that the runs keep going."""
        result = super().run(*args, **kwargs)
        if self.goodbye:
            print(self.goodbye, file=sys.stderr)
        return result
