"""The leaderboard pane: a tune run's trials, best first; the cursor rests on the best trial until the user
moves it, and its row is the selected trial."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable
from textual.widgets.data_table import RowDoesNotExist

from trainconsole.console.core.board import Row, TrialsView
from trainconsole.console.core.leaderboard import ITER_WIDTH, METRIC_WIDTH, Search, Trial

#: Columns: key, header, width (None: the searched values take the rest).
COLUMNS = (("best", "", 1), ("trial", "trial", 5), ("status", "status", 8), ("iter", "it", ITER_WIDTH),
           ("metric", "metric", METRIC_WIDTH), ("mem", "mem", 5), ("speed", "s/s", 5),
           ("values", "searched", None))
STATUS_STYLES = {"running": "bold green", "done": "cyan", "error": "bold red", "killed": "magenta",
                 "stopped": "yellow", "pending": "dim"}


class Leaderboard(DataTable[Text]):
    """Trials ranked live by the tune metric, with the best marked."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes, cursor_type="row", zebra_stripes=False)
        self._rows: list[Row] = []
        self._placed: str | None = None  # where update_rows last put the cursor itself
        for key, header, width in COLUMNS:
            self.add_column(header, key=key, width=width)

    @property
    def selected_trial(self) -> str | None:
        """The id of the trial under the cursor, or None when there are no trials."""
        if not self._rows or not 0 <= self.cursor_row < len(self._rows):
            return None
        return self._rows[self.cursor_row][0]

    def chosen(self, search: Search) -> Trial | None:
        """The trial under the cursor, else the search's best: what `t` trains."""
        return search.trials.get(self.selected_trial or "") or search.leader()

    def update_rows(self, trials: TrialsView) -> None:
        """Show the trials' rows (best first); the cursor stays on its trial when the order changes."""
        rows, metric = trials.rows, trials.metric
        self.columns[self._key("metric")].label = Text(metric[:7])
        self.border_title = f"trials, best {metric} each (x stop · t train)"  # t trains to max_t
        if rows == self._rows:
            return
        keep = self.selected_trial
        moved = keep is not None and keep != self._placed  # the user chose a trial: the cursor stays on it
        self.clear()
        for trial_id, cells in rows:
            self.add_row(*(self._styled(key, c) for (key, _, _), c in zip(COLUMNS, cells, strict=True)),
                         key=trial_id)
        self._rows = list(rows)
        best = next((tid for tid, cells in rows if cells[0]), rows[0][0] if rows else None)  # the ★ row
        target = keep if moved else best
        if target is not None:
            try:
                self.move_cursor(row=self.get_row_index(target))
            except RowDoesNotExist:
                return
            if not moved:
                self._placed = target  # resting on the best trial, until the user moves the cursor

    def show_importance(self, text: str) -> None:
        """The parameter importance line under the table (computed off the UI thread)."""
        self.border_subtitle = text

    def _key(self, name: str):  # type: ignore[no-untyped-def]
        return next(k for k in self.columns if k.value == name)

    def _styled(self, key: str, value: str) -> Text:
        if key == "status":
            style = "yellow" if value.startswith("cut@") else STATUS_STYLES.get(value, "")
            return Text(value, style=style, no_wrap=True)
        if key == "best":
            return Text(value, style="bold yellow")
        if key in ("iter", "metric", "mem", "speed"):
            return Text(value, justify="right")
        return Text(value, no_wrap=True, overflow="ellipsis")
