"""`c`: the marked runs side by side: results and cost per run, the config keys that differ, their curves.

It renders a `Comparison` (trainconsole/console/core/compare.py) and the runs' histories; `e` closes it with
the run
under the cursor and the differing keys, for the app to fill the setup form with that run's config.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from trainconsole.console.core.compare import AXES, Comparison, curves, fact_rows, value_text
from trainconsole.console.core.run_state import RunState
from trainconsole.console.widgets.loss_plot import LossPlot

#: What `e` hands back: the chosen run's id and the keys that differ.
Edit = tuple[str, list[str]]


class CompareScreen(Screen[Edit | None]):
    """Two or more runs compared; one colour per run in both tables, the plot and its legend."""

    BINDINGS = [
        Binding("a", "all_keys", "All keys"),
        Binding("x", "axis", "Steps/time"),
        Binding("e", "edit", "Edit & launch", tooltip="Compare: the setup form with the run's config"),
        Binding("escape,c", "back", "Back"),
    ]

    def __init__(self, comparison: Comparison, runs: Sequence[RunState]) -> None:
        super().__init__(id="compare")
        self.comparison, self.runs = comparison, list(runs)
        self.all_keys = False
        self.axis = AXES[0]

    def compose(self) -> ComposeResult:
        """The table (a column per run: its figures, then the config keys), the curves and the legend."""
        yield DataTable(id="compare-table", cursor_type="column", zebra_stripes=False)
        yield LossPlot(id="compare-plot")
        yield Static(self._legend(), id="compare-legend")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        """Fill the table, put the cursor on the first run, and draw the curves."""
        table = self.query_one(DataTable)
        table.add_column("", key="name")
        for facts in self.comparison.runs:
            table.add_column(Text(facts.label, style=f"bold {facts.color}"), key=facts.id)
        self._fill()
        table.move_cursor(column=1)
        table.focus()
        self.call_after_refresh(self._plot)

    def _fill(self) -> None:
        table = self.query_one(DataTable)
        table.clear()
        for name, cells in fact_rows(self.comparison):
            table.add_row(Text(name, style="dim"), *(Text(c, justify="right") for c in cells))
        keys = self.comparison.keys(self.all_keys)
        differs = set(self.comparison.differs)
        for key in keys:
            style = "bold" if key in differs else "dim"
            values = [Text(value_text(v), style=style, justify="right") for v in self.comparison.values[key]]
            table.add_row(Text(key, style=style), *values)
        if not keys:
            table.add_row(Text("(same config)", style="dim"), *([""] * len(self.runs)))
        shown = "every key" if self.all_keys else f"{len(differs)} config key(s) differ"
        table.border_title = f"compare {len(self.runs)} runs · {shown}"
        toggle = "only what differs" if self.all_keys else "all keys"
        table.border_subtitle = f"a: {toggle} · ← → run · e: edit it"

    def _plot(self) -> None:
        plot = self.query_one(LossPlot)
        lines = curves(self.runs, self.axis, max(20, plot.size.width))
        xlabel = "step" if self.axis == AXES[0] else "seconds"
        plot.show(lines, f"train loss, val acc → on {self.axis} (x: switch)", "no curves yet", xlabel)

    def _legend(self) -> Text:
        legend = Text()
        for facts in self.comparison.runs:
            legend.append("■ ", style=facts.color).append(facts.label + "  ")
        return legend

    def action_all_keys(self) -> None:
        """Show every config key, or only those that differ."""
        self.all_keys = not self.all_keys
        self._fill()

    def action_axis(self) -> None:
        """Curves on steps, or on wall time."""
        self.axis = AXES[(AXES.index(self.axis) + 1) % len(AXES)]
        self._plot()

    def action_edit(self) -> None:
        """Close, and have the setup form filled with the config of the run under the cursor."""
        column = self.query_one(DataTable).cursor_column  # column 0 names the rows: the first run
        run_id = self.comparison.runs[min(max(column - 1, 0), len(self.runs) - 1)].id
        self.dismiss((run_id, self.comparison.differs))

    def action_help(self) -> None:
        """Every key and what it does."""
        from trainconsole.console.screens.help_screen import show_help

        show_help(self.app)

    def action_back(self) -> None:
        """Back to the dashboard."""
        self.dismiss(None)
