"""The first frame: the runs pane and the keys, while the dashboard is built behind it.

The dashboard's setup form, plot (plotext), device and log panes cost about as much to import and lay out
as Textual itself; none of them has anything to show before the runs are read, which starts after the first
frame anyway. So the console opens on this, as cheap as a minimal Textual app, and switches to the
dashboard right after (`TrainConsole.open_dashboard`).
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer

from console.screens.keys import KEYS
from console.widgets.runs_table import RunsTable


class StartScreen(Screen[None]):
    """An empty runs pane and the footer's keys (dimmed: they act once the dashboard is up)."""

    BINDINGS = KEYS

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Every dashboard key shows, dimmed, for the fraction of a second before the dashboard opens."""
        return None

    def compose(self) -> ComposeResult:
        """The runs table (no rows yet) and the footer."""
        yield RunsTable(id="runs", classes="pane")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        """Title the pane as the dashboard does; open the dashboard once this frame is painted."""
        self.query_one(RunsTable).border_title = "runs"
        self.screen_layout_refresh_signal.subscribe(self, self._laid_out)

    def _laid_out(self, _: Screen[None]) -> None:
        if not self.query_one(Footer).children and self.app.app_focus:
            return  # the footer's keys come in a later layout: the first frame is the one with them
        # (A blurred app's footer waits for focus to show keys: in a browser tab, Textual's web driver
        # starts blurred until the page is focused. The dashboard does not wait for that.)
        self.screen_layout_refresh_signal.unsubscribe(self)
        self.call_after_refresh(self.app.open_dashboard)  # type: ignore[attr-defined]  # once painted
