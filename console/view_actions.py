"""The keys that change what the dashboard shows: overlay, weights view and layer, sort order, help.

A mixin of the app (like `run_actions`); which of them fit the selection is `check_action`'s to say.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.binding import Binding

from console.core.state import RANKINGS, Board, weights_view
from console.screens.help_screen import HelpScreen

if TYPE_CHECKING:
    from console.screens.main_screen import MainScreen

#: Keys the help screen lists that are no binding of the app's.
OTHER_KEYS = [("↑ ↓ pgup pgdn", "Move the selection in the runs pane"),
              ("enter", "In the runs pane: show the run's plot; in the form: launch")]


class ViewActions:
    """Overlay, weights, layer, sort and help for the app (which provides the attributes below)."""

    BINDINGS: list[Binding]
    board: Board
    main: MainScreen
    dashboard: bool
    selected: str | None
    marked: list[str]
    ranking: str
    weights_on: bool
    layer: str | None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Keys that fit the selection: x and t for a tune run; h (and space) for other runs; [ ] in the
        weights view; c once two runs are marked; only ? and q over the compare view."""
        if not self.dashboard and action != "quit":
            return None  # shown dimmed on the first frame, until the dashboard opens (a fraction of a second)
        comparing = bool(self.screen_stack) and self.screen_stack[-1].id == "compare"
        if comparing and action not in ("help", "quit"):
            return False  # the lifecycle and view keys act on the dashboard: not while comparing
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
        if action == "compare":  # shown once two runs are marked (space)
            return len(self.compared()) >= 2
        return True

    def action_mark(self) -> None:
        """Overlay the selected run on the plot (or take it off)."""
        self.selected = self._cursor_run()
        if self.selected is None:
            return
        if self.selected in self.marked:
            self.marked.remove(self.selected)
        else:
            self.marked.append(self.selected)
        self.refresh_bindings()  # c shows once two runs are marked
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
        self.push_screen(HelpScreen(keys + OTHER_KEYS))
