"""`trainconsole`: the Textual console. Wires the screens, the global keys, the tailer thread, the device
sampler and the board; the dashboard screen owns its keys and draws itself.

Never imports torch, torchvision or ray (runs are separate, detached processes), so it opens at once.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
import time
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

# Textual repaints what changed at most TEXTUAL_FPS times a second (60 unless told): each of our frames then
# waited up to 17 ms for its repaint (the live lag's p99 ~127 -> ~100 ms at 240, benchmarks/console_live.py).
# Our own frames are paced (FRAME_S, ~33 a second), so a higher cap only repaints sooner. Set before Textual
# reads it.
os.environ.setdefault("TEXTUAL_FPS", "240")

from textual import events, work  # noqa: E402
from textual.app import App  # noqa: E402
from textual.binding import Binding  # noqa: E402
from textual.worker import Worker, WorkerState, get_current_worker  # noqa: E402

from trainconsole import protocol
from trainconsole.console import demos, hangup
from trainconsole.console.screens.start_screen import StartScreen
from trainconsole.console.typeahead import TypeAhead

if TYPE_CHECKING:
    from textual.notifications import SeverityLevel

    from trainconsole.console.core.board import Board
    from trainconsole.console.core.notices import Notice
    from trainconsole.console.screens.main_screen import MainScreen
    from trainconsole.console.services import gpu
    from trainconsole.console.services.tailer import RunsRead, Tailer
    from trainconsole.control import Control
    from trainconsole.protocol.host_devices import HostSnapshot

DEVICES_S = 0.5  # NVML at 2 Hz
FULL_GC_AFTER = 100  # middle-generation passes between full ones, once every history is read (Python: 10)
#: Allocations between young passes, once every history is read (Python: 700). Live at 10,000 events/s the
#: young passes came ~95 times a second, so the full one (60-160 ms, holding both threads) every ~12 s:
#: one fell in most measured windows, and was the lag's p99 (benchmarks/console_live.py, issue 47).
YOUNG_GC_AFTER = 7000
BELL_ENV = "TRAINCONSOLE_BELL"


class TrainConsole(App[None]):
    """Set up, launch, watch, stop and kill training runs."""

    CSS_PATH = "app.tcss"
    ENABLE_COMMAND_PALETTE = False
    TITLE = "trainconsole"
    BINDINGS = [
        Binding("question_mark", "screen.help", "Help", key_display="?"),  # each screen's own help
        Binding("q", "quit", "Quit"),
    ]

    def __init__(self, home: Path | None = None, sampler: gpu.Sampler | None = None,
                 clock: Callable[[], float] = time.time, config_path: Path | None = None,
                 read_only: bool = False, bell: bool | None = None) -> None:
        # NO_COLOR: with native ANSI colours Textual drops colour entirely (else it only greys it out).
        super().__init__(ansi_color=True if "NO_COLOR" in os.environ else None)
        self.home = home or protocol.home()
        (self.home / "runs").mkdir(mode=0o700, parents=True, exist_ok=True)
        self.sampler = sampler  # None: NVML, set up with the dashboard (not for the first frame)
        self.clock = clock
        self.loaded = False  # every run's history has been read and taken into the board
        self.leaders: dict[str, tuple[int | None, float | None]] = {}  # handed to the device sampler
        self.config_path = str(config_path or demos.console_demo())
        self.devices: gpu.Devices | None = None
        self.other_hosts: tuple[HostSnapshot, ...] = ()  # their device snapshots, read while the pane shows
        self.devices_shown = False
        self._stopping = threading.Event()
        self.dashboard = False  # the dashboard has replaced the first frame's StartScreen
        self.read_only = read_only  # watching only: the control layer refuses every action
        self.typeahead = TypeAhead(self)  # keys typed ahead wait for the one before to land
        # the terminal's bell with a run's notice: --bell, or TRAINCONSOLE_BELL=1 (off by default)
        self.ring = bell if bell is not None else os.environ.get(BELL_ENV, "") not in ("", "0")

    @cached_property
    def board(self) -> Board:
        """The app's own board of runs: the tailer thread hands it updates in RunsRead messages (made, as
        the tailer is, after the first frame: their modules are not loaded before it)."""
        from trainconsole.console.core.board import Board

        return Board()

    @cached_property
    def tailer(self) -> Tailer:
        """The reader thread that follows every run's event log (started with the dashboard)."""
        from trainconsole.console.services.tailer import Tailer

        return Tailer(self.home, self.post_message, on_error=self._tailer_failed)

    @cached_property
    def control(self) -> Control:
        """The control layer every key acts through (imported after the first frame)."""
        from trainconsole.control import Control

        return Control(self.home, read_only=self.read_only)

    def get_default_screen(self) -> StartScreen:
        """The first frame: the runs pane and the keys, as cheap as a minimal app (the dashboard follows)."""
        return StartScreen(read_only=self.read_only, open_dashboard=self.open_dashboard)

    async def open_dashboard(self) -> None:
        """After the first frame (StartScreen calls it): the dashboard, its form filled from the demo. The
        cycle collector, off until the first frame (`cli.open_console`), is on again."""
        gc.enable()
        from trainconsole.console.screens.main_screen import (
            MainScreen,  # with it plotext, the form's checks...
        )

        try:
            config, source = protocol.load(self.config_path), self.config_path
        except protocol.ConfigError:
            config, source = protocol.defaults(), "built-in defaults (the digits demo)"
        self.add_mode("dashboard", lambda: MainScreen(config, source, self.config_path, self.board,
                                                      self.control, self.clock, feeds=self))
        await self.switch_mode("dashboard")  # its own screen stack: dialogs go over the dashboard
        self.dashboard = True
        self.refresh_bindings()
        self.tailer.start()  # reading runs and sampling devices wait too: the first frame has the CPU
        self.sample_devices()
        self.main.frames.redraw()

    def help_sections(self) -> list[tuple[str, list[Binding]]]:
        """What `?` lists, from any screen: every screen's own bindings, by where they act (which screens
        there are is the app's to know)."""
        from trainconsole.console.screens.compare_screen import CompareScreen
        from trainconsole.console.screens.main_screen import MainScreen
        from trainconsole.console.widgets.run_form import RunForm

        return [("dashboard", list(MainScreen.BINDINGS)), ("setup form (5 or n)", list(RunForm.BINDINGS)),
                ("compare (c, with two runs overlaid)", list(CompareScreen.BINDINGS)),
                ("anywhere", [b for b in self.BINDINGS if isinstance(b, Binding)])]

    @property
    def main(self) -> MainScreen:
        """The dashboard screen (also while a dialog is over it)."""
        return self.screen_stack[0]  # type: ignore[return-value]

    async def on_event(self, event: events.Event) -> None:
        """A key read while an earlier one is still on its way waits its turn
        (trainconsole/console/typeahead.py)."""
        if isinstance(event, events.Key) and not event.is_forwarded and self.typeahead.hold(event):
            return
        await super().on_event(event)

    def on_mount(self) -> None:
        """Quit if the terminal goes; runs are read and devices sampled once the dashboard is open."""
        hangup.watch(self)
        self.set_interval(1.0, self._tick)

    def on_app_focus(self) -> None:
        """In a browser tab (Textual's web driver starts blurred), the footer shows its keys once focused."""
        self.refresh_bindings()

    def on_unmount(self) -> None:
        """Stop the threads (the runs themselves go on)."""
        self._stopping.set()
        if "tailer" in self.__dict__:  # (made with the dashboard)
            self.tailer.stop()

    def _tailer_failed(self, text: str) -> None:
        try:
            self.call_from_thread(self.notify, text, severity="error", timeout=8)
        except RuntimeError:  # the app is closing
            pass

    # -- the board ------------------------------------------------------------------------------------

    def on_runs_read(self, message: RunsRead) -> None:
        """The tailer read something: take it into the board, let it read on, draw it in the next frame."""
        from trainconsole.console.core.notices import Before, notices

        for update in message.updates.values():
            before = Before.of(self.board.runs.get(update.run_id))
            self.board.take(update)
            self._tell(notices(update, before, self.board.runs.get(update.run_id)))
        self.tailer.taken()
        if message.loaded and not self.loaded:
            if not self.read_only:
                self.index_home()
            if not self.is_headless:  # (not in a test's process: it would keep that process's garbage)
                # Every history is read: what is on hand now lives as long as the console, so the cycle
                # collector stops walking it (a full pass over it held the screen 35-95 ms: the live
                # lag's p99 went from 132-155 ms to 113-118 ms, benchmarks/console_live.py). The full
                # passes left (20-45 ms over what came since) then came every ~5 s: one in ten as many
                # (p99 ~100 -> ~95 ms, with TEXTUAL_FPS above).
                gc.freeze()
                _, middle, _ = gc.get_threshold()
                gc.set_threshold(YOUNG_GC_AFTER, middle, FULL_GC_AFTER)
        self.loaded = self.loaded or message.loaded
        live = [r for r in self.board.runs.values() if r.status == "running"]
        self.leaders = {r.id: (r.pid, r.pid_started) for r in live}  # a new dict: the sampler's to read
        self._board_changed()

    @work(thread=True, exclusive=True, group="index", exit_on_error=False)
    def index_home(self) -> None:
        """Once every run is read, bring the run index up to date (as `ls` does), so that the next start
        takes the ended runs' rows from it instead of reading every log (a home `ls` never listed)."""
        self.control.summaries()

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = False) -> None:
        """A toast, its words as written, never read as markup (a widget's `notify` asks for markup): they
        name extras (`pip install 'trainconsole[train]'` lost its `[train]`), paths and causes."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=False)

    def _tell(self, found: list[Notice]) -> None:
        """A run ended or warns, seen live: a toast each (and the bell, if asked for)."""
        for notice in found:
            self.notify(notice.text, severity=notice.severity, timeout=8)  # type: ignore[arg-type]
        if found and self.ring:
            self.bell()

    def _tick(self) -> None:
        for run in self.board.runs.values():
            if run.status == "running":
                self.board.touch(run.id)  # elapsed time moves on
        if self.dashboard and self.screen_stack:
            self.main.frames.schedule_soon()  # (with the next read's frame, if one comes soon)

    def _board_changed(self) -> None:
        if self.dashboard and self.screen_stack:
            self.main.frames.schedule()

    # -- devices --------------------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="devices", exit_on_error=False)
    def sample_devices(self) -> None:
        """Sample device memory at <= 2 Hz in a thread (NVML calls can block)."""
        from trainconsole.console.services import gpu  # psutil, and NVML when there is a GPU
        from trainconsole.console.services.host_devices import OtherHosts

        worker = get_current_worker()
        sampler = self.sampler = self.sampler or gpu.NvmlSampler(self.home)
        others = OtherHosts(self.home)
        while not (worker.is_cancelled or self._stopping.is_set()):
            seen = None
            try:
                devices = sampler.sample(gpu.families(self.leaders))
                seen = others.look(self.clock()) if self.devices_shown else None  # (a stat per host)
            except Exception as e:  # a sampler failure is shown in the pane; sampling goes on
                devices = gpu.Devices(note=f"device sampling failed: {type(e).__name__}: {e}")
            if worker.is_cancelled or self._stopping.is_set():
                return
            self.call_from_thread(self._show_devices, devices, seen)
            self._stopping.wait(DEVICES_S)

    def _show_devices(self, devices: gpu.Devices, others: tuple[HostSnapshot, ...] | None = None) -> None:
        self.devices = devices
        self.other_hosts = self.other_hosts if others is None else others
        if self.screen_stack and self.dashboard:
            self.devices_shown = self.main.show_devices()

    # -- workers and quitting ---------------------------------------------------------------------------

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A failed action is shown, never fatal."""
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.notify(f"{event.worker.name}: {event.worker.error}", severity="error", timeout=8)

    def run(self, *args: Any, **kwargs: Any) -> Any:
        """Run the console; on quitting (`q`, Textual's own quit), say on the restored terminal that the runs
        keep going."""
        result = super().run(*args, **kwargs)
        if self.dashboard and self.return_code == 0:  # (not after a hang-up: the terminal is gone)
            print(self.goodbye, file=sys.stderr)
        return result

    @property
    def goodbye(self) -> str:
        """What quitting says: how many runs go on without the console."""
        running = sum(r.status == "running" for r in self.board.runs.values())
        return (f"trainconsole: closed. {running} run(s) keep going in the background; "
                "`trainconsole` reattaches, `trainconsole ls` lists them.")
