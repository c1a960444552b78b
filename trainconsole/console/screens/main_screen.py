"""The dashboard: setup, runs, plot, devices and log panes; side by side when wide, tabs when narrow.

Its keys are bound here (`keys.py`: they make its footer and `?`); each handler is short. A key that acts on
runs takes `Selection.targets` (the marked runs, else the cursor's) and hands them to `RunCommands`, which
asks for a confirm where one is due and calls the control layer in thread workers (they post `Done` and
`Launched` back). A pane's own keys are the pane's methods: the runs table sorts and asks for tags and
notes (`RunsTable`), the form asks where to load and save (`RunForm`), the leaderboard says which trial
(`Leaderboard`); each posts what the screen carries out (`AskLine`: a line to ask for). `Frames` draws the
app's board into the `Panes`, and `TableReads` reads the table's tags, notes and filter matches.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Tab, Tabs

from trainconsole import protocol
from trainconsole.console.core.arrangement import Arrangement
from trainconsole.console.core.board import Board, weights_view
from trainconsole.console.core.leaderboard import Search, Trial, searched, why_not_stop
from trainconsole.console.core.plot import next_metric, plotted
from trainconsole.console.core.selection import Selection
from trainconsole.console.filters import FilterError
from trainconsole.console.screens.feeds import Feeds
from trainconsole.console.screens.frames import Frames
from trainconsole.console.screens.help_screen import show_help
from trainconsole.console.screens.keys import (
    CHANGING_ACTIONS,
    KEYS,
    MARK_SEARCH,
    PANE_KEYS,
    RANK,
    RARE_ACTIONS,
    REFUSED,
    WHY,
    WHY_NOT,
)
from trainconsole.console.screens.panes import Panes
from trainconsole.console.screens.path_screen import PathScreen
from trainconsole.console.screens.run_commands import RunCommands
from trainconsole.console.screens.table_reads import TableReads
from trainconsole.console.widgets.ask_line import AskLine
from trainconsole.console.widgets.filter_line import FilterLine
from trainconsole.console.widgets.gpu_bars import GpuBars
from trainconsole.console.widgets.host_groups import HostGroups
from trainconsole.console.widgets.leaderboard import Leaderboard
from trainconsole.console.widgets.loss_plot import LossPlot
from trainconsole.console.widgets.run_form import RunForm
from trainconsole.console.widgets.run_log import RunLog
from trainconsole.console.widgets.runs_table import RunsTable
from trainconsole.console.widgets.weight_histogram import WeightHistogram
from trainconsole.control import Control
from trainconsole.protocol import Config, RunDir, tune_config

PANES = {"runs": "1 Runs", "plot": "2 Plot", "devices": "3 Devices", "log": "4 Log", "setup": "5 Setup"}
#: Below this many columns or rows, one pane at a time (tabs).
WIDE = (100, 30)
VERY_WIDE = 160

#: The keys that fit some selections and not others (see `MainScreen.check_action`).
SELECTION_ACTIONS = ("stop_trial", "train_trial", "weights", "mark", "layer", "compare", "metric")


class MainScreen(Screen[None]):
    """Lays the panes out for the terminal's size, puts each frame's `View` into them, and routes its keys:
    to the control layer, to its `Selection`, or to the pane that owns them."""

    BINDINGS = [*KEYS, *PANE_KEYS, RANK, MARK_SEARCH, *REFUSED, *WHY]

    def __init__(self, config: Config, source: str, path: str, board: Board, control: Control,
                 clock: Callable[[], float], feeds: Feeds) -> None:
        super().__init__()
        self.config, self.source, self.config_path = config, source, path
        self.board, self.clock = board, clock  # the app's: the tailer's updates go into the board
        self.feeds = feeds  # the app's devices, tailer and progress, by name
        self.pane = "runs"
        self.selection = Selection()
        self.frames = Frames(self, board, self.selection, clock, feeds)
        self.control = control
        self.commands = RunCommands(self, control)
        self.reads = TableReads(self, control, board, self.selection, feeds)

    def compose(self) -> ComposeResult:
        """The pane bar (narrow only), the panes, and the footer."""
        yield Tabs(*(Tab(label, id=f"tab-{name}") for name, label in PANES.items()), id="panebar")
        with Horizontal(id="main"):
            yield RunForm(self.config, self.source, path=self.config_path, id="setup", classes="pane")
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
        if self.control.read_only:  # watching only: no form (the control layer refuses its launch)
            titles["runs"] = "runs (read-only)"
            self.add_class("-read-only")
            self.query_one(RunsTable).read_only = True
        for name, title in titles.items():
            self.query_one(f"#{name}").border_title = title
        self.show_pane("runs")
        self.reads.start(self.query_one(RunsTable))
        q = self.query_one  # (the panes it composed, handed to what draws into them)
        self.frames.panes = Panes(self, q(RunsTable), q(RunLog), q(GpuBars), q(HostGroups), q("#devices"),
                                  q(Leaderboard), q(LossPlot), q(WeightHistogram))

    @property
    def path(self) -> str:
        """The config file the form was loaded from (or last saved to)."""
        return self.query_one(RunForm).path

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
        return self.commands.refused(action)

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
            self.query_one(RunForm).focus_first()
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

    def show_devices(self) -> bool:
        """Draw the app's latest device sample (the app calls this when a new one comes); whether the
        devices pane shows (other hosts' devices are read only while it does)."""
        self.frames.draw_devices()
        return self.query_one("#devices").region.area > 0

    @property
    def arrangement(self) -> Arrangement:
        """The runs table's filter, sort column, tags and notes."""
        return self.query_one(RunsTable).arrangement

    # -- keys: which of them fit ----------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Keys that fit the selection (`Selection.fits`), and `/` but in the form's fields (where it is
        typed). Before the first frame has selected a run, those that depend on it show dimmed, as on the
        first screen (which of them fit is not known yet), but the rare ones are hidden. A read-only
        console hides the keys that change runs (`refused`, bound after them, says so when pressed)."""
        if action == "refused":
            return self.control.read_only
        if self.control.read_only and action in CHANGING_ACTIONS:
            return False
        if self.frames.keys_for is None and action in SELECTION_ACTIONS:
            return False if action in RARE_ACTIONS else None
        if action == "filter":
            return not isinstance(self.focused, Input)
        return self.selection.fits(action, self.board)

    def action_refused(self, action: str) -> None:
        """A changing key in a read-only console: the control layer refuses it, in its words (x and t that
        do not fit the selection say why not, as anywhere)."""
        if not self.selection.fits(action, self.board):
            self.action_why_not(action)
        else:
            getattr(self, f"action_{action}")()

    def action_why_not(self, action: str) -> None:
        """A key that cannot act on this selection: say why (the key itself did not run)."""
        if self.frames.keys_for is None:
            self.notify("the runs are still being read", severity="warning")
        else:
            self.notify(WHY_NOT[action], severity="warning")

    # -- keys that act on runs: their targets, a confirm, the control layer ---------------------------

    def _cursor_run(self) -> str | None:
        # The cursor, not the selection: its RowHighlighted message may still be queued behind this key.
        return self.query_one(RunsTable).selected_id or self.selection.selected

    def _selected_run(self) -> RunDir | None:
        """The run under the cursor, now the selected one (else a notice and None)."""
        self.selection.selected = self._cursor_run()
        if self.selection.selected is None:
            self.notify("no run selected", severity="warning")
            return None
        return self.control.run(self.selection.selected)

    def chosen_runs(self) -> list[RunDir]:
        """The marked runs the board still has, else the run under the cursor (else a notice and [])."""
        ids = self.selection.targets(self.board, self._cursor_run())
        if not ids:
            self.notify("no run selected", severity="warning")
        return [self.control.run(run_id) for run_id in ids]

    def action_stop(self) -> None:
        """Ask the marked (else the selected) runs to checkpoint and stop."""
        self.commands.stop(self.chosen_runs())

    def action_kill(self) -> None:
        """Kill the marked (else the selected) runs and all their processes, after a confirm."""
        self.commands.kill(self.chosen_runs())

    def action_resume(self) -> None:
        """Start the marked (else the selected) runs again from their last checkpoints."""
        self.commands.resume(self.chosen_runs())

    def action_delete(self) -> None:
        """Move the marked (else the selected) runs to the home's trash, after a confirm."""
        self.commands.delete(self.chosen_runs())

    def action_launch(self) -> None:
        """Launch the form's config as a new run."""
        form = self.query_one(RunForm)
        config = form.check()
        if config is None:
            self.notify("the config has a problem: see the setup pane", severity="error")
            self.show_pane("setup")
            form.focus_first_error()
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
        self.feeds.tailer.poke()

    def on_run_commands_done(self, event: RunCommands.Done) -> None:
        """An action ended: say how, and read the runs at once."""
        self.notify(event.message, severity=event.severity)  # type: ignore[arg-type]
        self.feeds.tailer.poke()

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
        if found is None or trial_id is None:
            return
        run, search = found
        why = why_not_stop(search.trials[trial_id], self.board.runs[run.id].status)
        if why:
            self.notify(why, severity="warning")
        else:
            self.commands.stop_trial(run, trial_id, search.trials[trial_id].number)

    def action_train_trial(self) -> None:
        """Train the selected trial's config (or the best trial's) as a full run."""
        found = self._selected_search()
        trial = self.chosen_trial(found[1]) if found else None
        if found is None or trial is None:
            return
        self.notify(f"training trial #{trial.number}: {searched(trial.config)}")  # what `t` took, said first
        self.commands.train_trial(found[0], trial.number, dict(trial.config))

    # -- keys that change what is shown ---------------------------------------------------------------

    def action_metric(self) -> None:
        """Plot the selected run's next metric."""
        run = self.board.runs[self.selection.selected or ""]
        run.plotted = next_metric(run)
        self.notify(f"plotting {plotted(run)}", timeout=2)
        self.frames.redraw()

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
        self.query_one(RunsTable).sort_by_ranking()
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

    # -- the runs table's keys (`RunsTable`): / filter, > < sort, # tags, a note -----------------------

    def action_filter(self) -> None:
        """Open the filter line (the `ls --filter` language)."""
        self.show_pane("runs")
        self.query_one(FilterLine).open()

    def on_filter_line_applied(self, event: FilterLine.Applied) -> None:
        """Enter: show the filter's runs (a bad filter is said under it, the table unchanged)."""
        try:
            self.reads.apply(event.text)
        except FilterError as e:
            self.query_one(FilterLine).show_error(str(e))
            return
        self.query_one(FilterLine).show_error("")

    def on_filter_line_cleared(self, event: FilterLine.Cleared) -> None:
        """Escape: every run again."""
        self.reads.clear()

    def action_sort(self) -> None:
        """Sort the runs by the next column."""
        self.query_one(RunsTable).sort_next()

    def action_reverse(self) -> None:
        """Reverse the sort column's order."""
        self.query_one(RunsTable).reverse_sort()

    def on_runs_table_rearranged(self, event: RunsTable.Rearranged) -> None:
        """Sorted, filtered or tagged otherwise: draw it."""
        self.frames.redraw()

    def action_tag(self) -> None:
        """Set the cursor's run's tags."""
        run = self._selected_run()
        if run is not None and not self.refused("tag"):
            self.query_one(RunsTable).ask_tags(run.id)

    def on_runs_table_tags_typed(self, event: RunsTable.TagsTyped) -> None:
        """Add and remove the tags typed."""
        self.commands.tag(self.control.run(event.run_id), event.add, event.drop)

    def action_note(self) -> None:
        """Write the cursor's run's note."""
        run = self._selected_run()
        if run is not None and not self.refused("note"):
            self.query_one(RunsTable).ask_note(run.id)

    def on_runs_table_note_typed(self, event: RunsTable.NoteTyped) -> None:
        """Set the note typed (empty: remove it)."""
        self.commands.note(self.control.run(event.run_id), event.text)

    # -- the form's keys (`RunForm`): o load, w save; c compares runs, whose e fills the form ----------

    def action_load(self) -> None:
        """Load a config TOML into the form."""
        if not self.refused("loading a config"):
            self.query_one(RunForm).ask_load()

    def on_run_form_load_asked(self, event: RunForm.LoadAsked) -> None:
        """Read the file asked for into the form."""
        self._load(event.path)

    def _load(self, path: str) -> None:
        try:
            config = tune_config.load_any(path)
        except protocol.ConfigError as e:
            self.notify(str(e), severity="error", timeout=8)
            return
        self.query_one(RunForm).load(config, path, path=path)
        self.show_pane("setup")

    def action_save(self) -> None:
        """Save the form's config as TOML."""
        if not self.refused("saving a config"):
            self.query_one(RunForm).ask_save()

    def on_run_form_save_asked(self, event: RunForm.SaveAsked) -> None:
        """Write the file asked for."""
        try:
            Path(event.path).expanduser().write_text(protocol.dumps(event.config))
        except OSError as e:
            self.notify(f"could not save {event.path}: {e.strerror}", severity="error")
            return
        self.query_one(RunForm).path = event.path
        self.notify(f"saved {event.path}")

    def on_ask_line(self, event: AskLine) -> None:
        """A pane asks for a line (a path, tags, a note): the dialog, its answer back to the pane."""
        self.app.push_screen(PathScreen(event.prompt, event.text, empty_ok=event.empty_ok), event.answer)

    def action_compare(self) -> None:
        """Compare the runs marked with space (two or more); its `e` fills the form from one of them."""
        from trainconsole.console.core.compare import compare
        from trainconsole.console.screens.compare_screen import CompareScreen

        ids = self.selection.compared(self.board)
        if len(ids) < 2:
            self.notify("mark two or more runs with space first", severity="warning")
            return
        if self.frames.want_histories(self.board, ids):  # rows from the run index: their logs first
            self.set_timer(0.05, self.action_compare)
            return
        runs = [self.board.runs[i] for i in ids]
        configs = [self.control.config(self.control.run(i)) for i in ids]
        self.app.push_screen(CompareScreen(compare(runs, configs, self.clock()), runs), self._edit)

    def _edit(self, choice: tuple[str, list[str]] | None) -> None:
        """The compare view's `e`: the chosen run's config in the form, the differing keys highlighted."""
        if choice is None or self.refused("editing a run's config"):
            return
        run_id, differs = choice
        try:
            config = self.control.valid_config(self.control.run(run_id))
        except protocol.ConfigError as e:
            self.notify(f"cannot edit {run_id}: {e}", severity="error", timeout=8)
            return
        self.show_pane("setup")
        self.query_one(RunForm).edit(config, f"run {run_id}: edit, then enter (or esc, l) launches", differs)
