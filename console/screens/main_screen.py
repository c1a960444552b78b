"""The dashboard: setup, runs, plot, devices and log panes; side by side when wide, tabs when narrow."""

from __future__ import annotations

from pathlib import Path

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Input, Tab, Tabs

from console.core.state import PlotLine, View
from console.core.weights import Snapshot
from console.screens.path_screen import PathScreen
from console.services.gpu import Devices
from console.widgets.gpu_bars import GpuBars
from console.widgets.leaderboard import Leaderboard
from console.widgets.loss_plot import LossPlot
from console.widgets.run_form import RunForm
from console.widgets.run_log import RunLog
from console.widgets.runs_table import RunsTable
from console.widgets.weight_histogram import WeightHistogram
from trainers import protocol
from trainers.protocol import Config, tune_config

PANES = {"runs": "1 Runs", "plot": "2 Plot", "devices": "3 Devices", "log": "4 Log", "setup": "5 Setup"}
#: Below this many columns or rows, one pane at a time (tabs).
WIDE = (100, 30)
VERY_WIDE = 160


class MainScreen(Screen[None]):
    """Lays the panes out for the terminal's size and puts each frame's `View` into them."""

    BINDINGS = [
        Binding("n,5", "pane('setup')", "Setup pane (new run)", show=False),
        Binding("1", "pane('runs')", "Runs pane", show=False),
        Binding("2", "pane('plot')", "Plot pane", show=False),
        Binding("3", "pane('devices')", "Devices pane", show=False),
        Binding("4", "pane('log')", "Log pane", show=False),
        Binding("o", "load", "Load a config TOML into the form", show=False),
        Binding("w", "save", "Save the form as TOML", show=False),
        Binding("escape", "pane('runs')", "Back to the runs pane", show=False),
    ]

    def __init__(self, config: Config, source: str, path: str) -> None:
        super().__init__()
        self.config, self.source, self.path = config, source, path
        self.pane = "runs"

    def compose(self) -> ComposeResult:
        """The pane bar (narrow only), the panes, and the footer."""
        yield Tabs(*(Tab(label, id=f"tab-{name}") for name, label in PANES.items()), id="panebar")
        with Horizontal(id="main"):
            yield RunForm(self.config, self.source, id="setup", classes="pane")
            with Vertical(id="watch"):
                yield RunsTable(id="runs", classes="pane")
                with Horizontal(id="middle"):
                    yield LossPlot(id="plot", classes="pane")
                    yield WeightHistogram(id="weights", classes="pane")
                    yield Leaderboard(id="leaderboard", classes="pane")
                    with VerticalScroll(id="devices", classes="pane"):
                        yield GpuBars(id="bars")
                yield RunLog(id="log", classes="pane")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        """Title the panes and start on the runs pane."""
        titles = {"setup": "setup: new run", "runs": "runs", "devices": "devices", "log": "log",
                  "leaderboard": "trials (x stop · t train)"}
        for name, title in titles.items():
            self.query_one(f"#{name}").border_title = title
        self.show_pane("runs")

    @property
    def narrow(self) -> bool:
        """Whether panes are shown one at a time."""
        return self.has_class("-narrow")

    def on_resize(self, event: events.Resize) -> None:
        """Switch between side-by-side panes and tabs."""
        narrow = event.size.width < WIDE[0] or event.size.height < WIDE[1]
        self.set_class(narrow, "-narrow")
        self.set_class(event.size.width >= VERY_WIDE, "-wide")  # room for a leaderboard beside the plot

    def show_pane(self, name: str) -> None:
        """Bring a pane forward (narrow) and focus it where it takes focus."""
        self.pane = name
        for pane in PANES:
            self.set_class(pane == name, f"-pane-{pane}")
        self.query_one(Tabs).active = f"tab-{name}"
        if name == "runs":
            self.query_one(RunsTable).focus()
        elif name == "setup":
            self.query_one(RunForm).query(Input).first().focus()
        elif self.narrow:
            self.set_focus(None)

    def action_pane(self, name: str) -> None:
        """Show (narrow) or focus (wide) a pane."""
        self.show_pane(name)

    def action_load(self) -> None:
        """Ask for a config TOML and load it into the form."""
        self.app.push_screen(PathScreen("Load a run or tune config (TOML):", self.path), self._load)

    def _load(self, path: str | None) -> None:
        if not path:
            return
        try:
            tune = "tune" in protocol.config.read(path)
            config = tune_config.load_tune(path) if tune else protocol.load(path)
        except protocol.ConfigError as e:
            self.notify(str(e), severity="error", timeout=8)
            return
        self.path = path
        self.query_one(RunForm).load(config, path)
        self.show_pane("setup")

    def action_save(self) -> None:
        """Ask for a path and save the form's config there as TOML."""
        if self.query_one(RunForm).check() is None:
            self.notify("fix the config first: see the setup pane", severity="error")
            return
        self.app.push_screen(PathScreen("Save the config as:", self.path), self._save)

    def _save(self, path: str | None) -> None:
        config = self.query_one(RunForm).check()
        if not path or config is None:
            return
        try:
            Path(path).expanduser().write_text(protocol.dumps(config))
        except OSError as e:
            self.notify(f"could not save {path}: {e.strerror}", severity="error")
            return
        self.path = path
        self.notify(f"saved {path}")

    def on_tabs_tab_activated(self, event: Tabs.TabActivated) -> None:
        """A click on the pane bar."""
        name = (event.tab.id or "").removeprefix("tab-")
        if name in PANES and name != self.pane:
            self.show_pane(name)

    def show_view(self, view: View) -> None:
        """Put one frame's data into the panes; parts that did not change are left alone."""
        self.query_one(RunsTable).update_rows(view.rows)
        if view.log is not None:
            self.query_one(RunLog).show(view.log)
        if view.mem is not None:
            self.query_one(GpuBars).show_run(view.mem.label, view.mem.mem)
        if view.log is not None:  # the selected run's panes were redrawn: a tune run has a leaderboard
            self.set_class(view.trials is not None, "-tune")
        if view.trials is not None:
            self.query_one(Leaderboard).update_rows(view.trials)

    def show_plot(self, lines: list[PlotLine], title: str, any_runs: bool) -> None:
        """Draw the plot's lines (or say why there are none)."""
        empty = "no data yet" if any_runs else "no runs yet: press l to launch the demo"
        self.query_one(LossPlot).show(lines, title, empty)

    def show_weights(self, history: list[Snapshot], title: str, on: bool) -> None:
        """Show (or hide again) the weights view in the plot's place, with one layer's histograms."""
        self.set_class(on, "-weights")
        if on:
            self.query_one(WeightHistogram).show(history, title, "this run has no weight histograms yet")

    def show_devices(self, devices: Devices, labels: dict[str, str]) -> None:
        """Draw a new device sample."""
        self.query_one(GpuBars).show(devices, labels)

    @property
    def plot_width(self) -> int:
        """Columns the plot has to draw in."""
        return self.query_one(LossPlot).size.width
