"""Where a frame goes: the dashboard's panes, each filled through its widget's own `show`, and the screen's
classes that say which of them show (`-tune`: a search's leaderboard; `-weights`: the weights view in the
plot's place). The dashboard hands its panes to its `Frames` once they are composed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trainconsole.protocol.places import host as hosts

if TYPE_CHECKING:
    from textual.screen import Screen
    from textual.widget import Widget

    from trainconsole.console.core.board import View
    from trainconsole.console.core.plot import PlotLine
    from trainconsole.console.core.run_state import RunState
    from trainconsole.console.core.weights import Snapshot
    from trainconsole.console.services.gpu import Devices
    from trainconsole.console.widgets.gpu_bars import GpuBars
    from trainconsole.console.widgets.host_groups import HostGroups
    from trainconsole.console.widgets.leaderboard import Leaderboard
    from trainconsole.console.widgets.loss_plot import LossPlot
    from trainconsole.console.widgets.run_log import RunLog
    from trainconsole.console.widgets.runs_table import RunsTable
    from trainconsole.console.widgets.weight_histogram import WeightHistogram


@dataclass
class Panes:
    """The dashboard's panes as a frame fills them."""

    screen: Screen[Any]
    table: RunsTable
    log: RunLog
    bars: GpuBars
    hosts: HostGroups
    devices: Widget  # the devices pane, around the bars and the host groups
    leaderboard: Leaderboard
    plot: LossPlot
    weights: WeightHistogram

    def show_view(self, view: View, runs: dict[str, RunState], now: float) -> None:
        """Put one frame's data into the panes; parts that did not change are left alone."""
        self.table.show_rows(view.rows, runs, now, view.selected)
        # runs of several hosts in the home: the memory bars are this host's alone
        title = f"devices: this host, {hosts.this_host()}" if len(view.hosts) > 1 else "devices"
        if self.devices.border_title != title:
            self.devices.border_title = title
        if view.log is not None:
            self.log.show(view.log)
        if view.mem is not None:
            self.bars.show_run(view.mem.label, view.mem.mem)
        if view.log is not None:  # the selected run's panes were redrawn: a tune run has a leaderboard
            self.screen.set_class(view.trials is not None, "-tune")
        if view.trials is not None:
            self.leaderboard.update_rows(view.trials)

    def show_plot(self, lines: list[PlotLine], title: str, any_runs: bool) -> None:
        """Draw the plot's lines (or say why there are none)."""
        empty = "no data yet" if any_runs else "no runs yet: press l to launch the demo"
        self.plot.show(lines, title, empty)

    def show_weights(self, history: list[Snapshot], title: str, on: bool) -> None:
        """Show (or hide again) the weights view in the plot's place, with one layer's histograms."""
        self.screen.set_class(on, "-weights")
        if on:
            self.weights.show(history, title, "this run has no weight histograms yet")

    def show_devices(self, devices: Devices, others: Any, labels: dict[str, str], now: float) -> None:
        """A device sample of this host and other hosts', with the runs' labels as the table shows them."""
        self.bars.show(devices, labels)
        self.hosts.show(hosts.this_host(), devices, others, labels, now)

    @property
    def plot_width(self) -> int:
        """Columns the plot has to draw in."""
        return self.plot.size.width
