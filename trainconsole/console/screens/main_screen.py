"""The dashboard: setup, runs, plot, devices and log panes; side by side when wide, tabs when narrow.

It owns its keys: the lifecycle keys act through the control layer (`RunCommands`, in thread workers),
the view keys change its `Selection`, and its `Frames` draw the app's board onto it. A search's `x` and
`t` are its own handlers here; three groups of its keys are still mixins, each in its own module:
`RunMarks`, `TableKeys` and `FormKeys`.
"""

from __future__ import annotations

from collections.abc import Callable

from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Tab, Tabs

from trainconsole.console.control import Control, Refused
from trainconsole.console.core.board import Board, View, weights_view
from trainconsole.console.core.leaderboard import Search, Trial, searched
from trainconsole.console.core.plot import PlotLine, next_metric, plotted
from trainconsole.console.core.selection import Selection
from trainconsole.console.core.weights import Snapshot
from trainconsole.console.screens.form_keys import FormKeys
from trainconsole.console.screens.frames import Frames
from trainconsole.console.screens.help_screen import show_help
from trainconsole.console.screens.keys import KEYS, MARK_SEARCH, PANE_KEYS, RANK, RARE_ACTIONS, WHY, WHY_NOT
from trainconsole.console.screens.run_commands import RunCommands
from trainconsole.console.screens.run_marks import RunMarks
from trainconsole.console.screens.table_keys import TableKeys
from trainconsole.console.services.gpu import Devices
from trainconsole.console.widgets.filter_line import FilterLine
from trainconsole.console.widgets.gpu_bars import GpuBars
from trainconsole.console.widgets.host_groups import HostGroups
from trainconsole.console.widgets.leaderboard import Leaderboard
from trainconsole.console.widgets.loss_plot import LossPlot
from trainconsole.console.widgets.run_form import RunForm
from trainconsole.console.widgets.run_log import RunLog
from trainconsole.console.widgets.runs_table import RunsTable
from trainconsole.console.widgets.weight_histogram import WeightHistogram
from trainconsole.trainers.protocol import Config, RunDir, hosts

PANES = {"runs": "1 Runs", "plot": "2 Plot", "devices": "3 Devices", "log": "4 Log", "setup": "5 Setup"}
#: Below this many columns or rows, one pane at a time (tabs).
WIDE = (100, 30)
VERY_WIDE = 160

#: The keys that fit some selections and not others (see `MainScreen.check_action`).
SELECTION_ACTIONS = ("stop_trial", "train_trial", "weights", "mark", "layer", "compare", "metric")


class MainScreen(RunMarks, TableKeys, FormKeys, Screen[None]):
    """Lays the panes out for the terminal's size, puts each frame's `View` into them, and owns the keys
    that act on the runs shown (those on marked runs in `RunMarks`, the table's own in `TableKeys`)."""

    BINDINGS = [*KEYS, *PANE_KEYS, RANK, MARK_SEARCH, *WHY]

    def __init__(self, config: Config, source: str, path: str, board: Board, control: Control,
                 clock: Callable[[], float]) -> None:
        super().__init__()
        self.config, self.source, self.path = config, source, path
        self.board, self.clock = board, clock  # the app's: the tailer's updates go into the board
        self.pane = "runs"
        self.selection = Selection()
        self.frames = Frames(self, board, self.selection, clock)
        self.commands = RunCommands(self, control)

    def compose(self) -> ComposeResult:
        """The pane bar (narrow only), the panes, and the footer."""
        yield Tabs(*(Tab(label, id=f"tab-{name}") for name, label in PANES.items()), id="panebar")
        with Horizontal(id="main"):
            yield RunForm(self.config, self.source, id="setup", classes="pane")
            with Vertical(id="watch"):
                yield RunsTable(id="runs", classes="pane")
                yield FilterLine(id="filter-line")
                with Horizontal(id="middle"):
                    yield LossPlot(id="plot", classes="pane")
                    yield WeightHistogram(id="weights", classes="pane")
                    yield Leaderboard(id="leaderboard", classes="pane")
                    with VerticalScroll(id="devices", classes="pane"):
                        yield GpuBars(id="bars")
                        yield HostGroups(id="hosts")
                yield RunLog(id="log", classes="pane")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        """Title the panes and start on the runs pane."""
        titles = {"setup": "setup: new run", "runs": "runs", "devices": "devices", "log": "log",
                  "leaderboard": "trials (x stop · t train)"}
        if self.commands.control.read_only:  # watching only: no form (the control layer refuses its launch)
            titles["runs"] = "runs (read-only)"
            self.add_class("-read-only")
        for name, title in titles.items():
            self.query_one(f"#{name}").border_title = title
        self.show_pane("runs")
        self.start_table_view()

    @property
    def narrow(self) -> bool:
        """Whether panes are shown one at a time."""
        return self.has_class("-narrow")

    def on_resize(self, event: events.Resize) -> None:
        """Switch between side-by-side panes and tabs."""
        narrow = event.size.width < WIDE[0] or event.size.height < WIDE[1]
        self.set_class(narrow, "-narrow")
        self.set_class(event.size.width >= VERY_WIDE, "-wide")  # room for a leaderboard beside the plot

    def refused(self, action: str) -> bool:
        """Whether the control layer refuses `action` in this session (then it is said in a toast)."""
        try:
            self.commands.control.check(action)
        except Refused as e:
            self.notify(str(e), severity="warning")
            return True
        return False

    def show_pane(self, name: str) -> None:
        """Bring a pane forward (narrow) and focus it where it takes focus."""
        if name == "setup" and self.refused("the setup form"):
            return
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

    def on_tabs_tab_activated(self, event: Tabs.TabActivated) -> None:
        """A click on the pane bar."""
        name = (event.tab.id or "").removeprefix("tab-")
        if name in PANES and name != self.pane:
            self.show_pane(name)

    def show_view(self, view: View) -> None:
        """Put one frame's data into the panes; parts that did not change are left alone."""
        rows = self.table_view.arrange(view.rows, self.board.runs, self.clock())  # filter, sort, tags
        self.query_one(RunsTable).update_rows(rows)
        self.show_run_meta(view.selected)  # its tags and note whole, and the filter, in the pane's title
        # runs of several hosts in the home: the memory bars are this host's alone
        title = f"devices: this host, {hosts.this_host()}" if len(view.hosts) > 1 else "devices"
        if self.query_one("#devices").border_title != title:
            self.query_one("#devices").border_title = title
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

    def show_devices(self) -> None:
        """Draw the app's latest device sample (if any), with the runs' labels as the table shows them."""
        devices: Devices | None = getattr(self.app, "devices", None)
        if devices is not None:
            self.query_one(GpuBars).show(devices, self.frames.labels)
            others = getattr(self.app, "other_hosts", ())  # other hosts' devices (issue 37)
            self.query_one(HostGroups).show(hosts.this_host(), devices, others, self.frames.labels,
                                            self.clock())

    def show_importance(self, text: str) -> None:
        """Put the parameter importance of the shown search under its trials."""
        self.query_one(Leaderboard).show_importance(text)

    def select_run(self, run_id: str) -> None:
        """Move the runs table's cursor to this run."""
        self.query_one(RunsTable).select(run_id)

    @property
    def plot_width(self) -> int:
        """Columns the plot has to draw in."""
        return self.query_one(LossPlot).size.width

    # -- keys: which of them fit ----------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Keys that fit the selection: x and t for a tune run; h (and space, as shown) for other runs;
        [ ] in the weights view; c once two runs are marked. Before the first frame has selected a
        run, they show dimmed, as on the first screen (which of them fit is not known yet), but the rare
        ones are hidden."""
        if self.frames.keys_for is None and action in SELECTION_ACTIONS:
            return False if action in RARE_ACTIONS else None
        tune, sel = self.selection.is_tune(self.board), self.selection
        if action == "filter":  # (in the form's fields, / is typed)
            return not isinstance(self.focused, Input)
        if action in ("stop_trial", "train_trial"):
            return tune
        if action == "weights":  # a tune run's plot is its trials' curves
            return not tune
        if action == "mark":  # overlaid runs are drawn on the loss plot, not in the weights view
            return not (tune or sel.weights_on)
        if action == "mark_search":  # (a search is marked too, for s k r delete: not overlaid)
            return tune
        if action == "layer":
            return sel.weights_on and not tune
        if action == "metric":  # a run that logs more than its loss (a script's own metrics)
            run = self.board.runs.get(sel.selected or "")
            return bool(run and run.metrics) and not (tune or sel.weights_on)
        if action == "compare":  # shown once two runs are marked (space)
            return len(sel.compared(self.board)) >= 2
        return True

    def action_metric(self) -> None:
        """Plot the selected run's next metric."""
        run = self.board.runs[self.selection.selected or ""]
        run.plotted = next_metric(run)
        self.notify(f"plotting {plotted(run)}", timeout=2)
        self.frames.redraw()

    def action_why_not(self, action: str) -> None:
        """A key that cannot act on this selection: say why (the key itself did not run)."""
        if self.frames.keys_for is None:
            self.notify("the runs are still being read", severity="warning")
        else:
            self.notify(WHY_NOT[action], severity="warning")

    # -- keys that act on runs (through the control layer) --------------------------------------------

    def action_launch(self) -> None:
        """Launch the form's config as a new run."""
        form = self.query_one(RunForm)
        config = form.check()
        if config is None:
            self.notify("the config has a problem: see the setup pane", severity="error")
            self.show_pane("setup")
            bad = form.first_error()
            if bad is not None:
                bad.focus()
            return
        self.commands.launch(config)

    def on_run_form_submitted(self, event: RunForm.Submitted) -> None:
        """Enter in the form launches."""
        self.commands.launch(event.config)

    def on_run_commands_launched(self, event: RunCommands.Launched) -> None:
        """A run was launched here: say so and select it once its row is drawn."""
        self.notify(f"launched {event.run_id}")
        self.frames.select_next = event.run_id
        self.show_pane("runs")
        self.app.tailer.poke()  # type: ignore[attr-defined]

    def on_run_commands_done(self, event: RunCommands.Done) -> None:
        """An action ended: say how, and read the runs at once."""
        self.notify(event.message, severity=event.severity)  # type: ignore[arg-type]
        self.app.tailer.poke()  # type: ignore[attr-defined]

    # -- a search's trials: x stops the one under the leaderboard's cursor, t trains its config --------

    def _selected_search(self) -> tuple[RunDir, Search] | None:
        """The selected run and its trials, if it is a tune run (else a notice and None)."""
        run = self._selected_run()
        state = self.board.runs.get(run.id) if run is not None else None
        if run is None or state is None or state.search is None or not state.search.trials:
            self.notify("select a tune run with trials first", severity="warning")
            return None
        return run, state.search

    def chosen_trial(self, search: Search) -> Trial | None:
        """The trial under the leaderboard's cursor, else the search's best: what `t` trains."""
        return self.query_one(Leaderboard).chosen(search)

    def action_stop_trial(self) -> None:
        """Stop the trial under the leaderboard's cursor; the rest of the search goes on."""
        found = self._selected_search()
        trial_id = self.query_one(Leaderboard).selected_trial if found else None
        if found is None or trial_id is None or self.refused("stop a trial"):  # (a UI-thread call)
            return
        self.commands.control.stop_trial(found[0], trial_id)
        self.notify(f"asked trial #{found[1].trials[trial_id].number} to stop; the search goes on")

    def action_train_trial(self) -> None:
        """Train the selected trial's config (or the best trial's) as a full run."""
        found = self._selected_search()
        trial = self.chosen_trial(found[1]) if found else None
        if found is None or trial is None:
            return
        self.notify(f"training trial #{trial.number}: {searched(trial.config)}")  # what `t` took, said first
        self.commands.train_trial(found[0], trial.number, dict(trial.config))

    # -- keys that change what is shown ---------------------------------------------------------------

    def action_help(self) -> None:
        """Every key and what it does."""
        show_help(self.app)

    def action_mark(self) -> None:
        """Overlay the selected run on the plot (or take it off)."""
        self.selection.selected = self._cursor_run()
        if self.selection.selected is None:
            return
        self.selection.toggle_mark(self.selection.selected)
        self.refresh_bindings()  # c shows once two runs are marked
        self.frames.redraw()

    def action_mark_search(self) -> None:
        """Space on a search: marked as any run (not shown in the footer: see MARK_SEARCH)."""
        self.action_mark()

    def action_weights(self) -> None:
        """Show the selected run's weight histograms in the plot's place, or the loss plot again."""
        self.selection.weights_on = not self.selection.weights_on
        self.refresh_bindings()  # [ and ] show only in the weights view
        self.frames.redraw()
        if self.narrow:
            self.show_pane("plot")

    def action_layer(self, move: int) -> None:
        """The weights view: show the previous or next layer."""
        sel = self.selection
        _, _, sel.layer = weights_view(self.board, sel.selected, sel.layer, move)
        self.frames.redraw()

    def action_rank(self) -> None:
        """Order runs newest first, or by best validation accuracy (and no longer by a column: `>`)."""
        self.table_view.sort = None
        self.notify(f"runs sorted by {self.selection.next_ranking()}")
        self.frames.redraw()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """The cursor moved: the plot, log and memory follow the selected run."""
        run_id = event.row_key.value
        if isinstance(event.data_table, RunsTable) and run_id != self.selection.selected:
            self.selection.selected = run_id
            if self.app.screen_stack:  # (a highlight can still arrive while the app closes down)
                self.refresh_bindings()  # the trial keys show only for a tune run
                self.frames.redraw()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter on a run: show its plot when panes are tabs."""
        if isinstance(event.data_table, RunsTable) and self.narrow:
            self.show_pane("plot")
