"""The first frame: the runs pane and the keys, while the dashboard is built behind it.

The dashboard's setup form, plot (plotext), device and log panes cost about as much to import and lay out
as Textual itself; none of them has anything to show before the runs are read, which starts after the first
frame anyway. So the console opens on this, as cheap as a minimal Textual app, and switches to the
dashboard right after (`TrainConsole.open_dashboard`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer

from trainconsole.console.screens.keys import CHANGING_ACTIONS, KEYS, RARE_ACTIONS
from trainconsole.console.widgets.runs_table import RunsTable

#: In a browser tab, how long the first frame waits for the page's focus (and the footer's keys).
FOCUS_WAIT_S = 1.0


class StartScreen(Screen[None]):
    """An empty runs pane and the footer's keys (dimmed: they act once the dashboard is up)."""

    BINDINGS = KEYS
    _opening = False

    def __init__(self, read_only: bool = False,
                 open_dashboard: Callable[[], Awaitable[None]] | None = None) -> None:
        super().__init__()
        self.read_only = read_only  # (its footer leaves out the keys that change runs)
        self.open_dashboard = open_dashboard  # the app's, called once this first frame is painted

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The dashboard's keys show, dimmed, for the fraction of a second before the dashboard opens (but
        those that fit only a few selections: at 120 columns they would push `q Quit` out; and, read-only,
        those that change runs)."""
        hidden = RARE_ACTIONS + (CHANGING_ACTIONS if self.read_only else ())
        return False if action in hidden else None

    def compose(self) -> ComposeResult:
        """The runs table (no rows yet) and the footer."""
        yield RunsTable(id="runs", classes="pane")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        """Title the pane as the dashboard does; open the dashboard once this frame is painted."""
        self.query_one(RunsTable).border_title = "runs"
        self.screen_layout_refresh_signal.subscribe(self, self._laid_out)
        if self.app.is_web:  # Textual's web driver starts blurred, and a blurred footer shows no keys until
            self.set_timer(FOCUS_WAIT_S, self._open)  # the page focuses it; a background tab's waits no more

    def _laid_out(self, _: Screen[None]) -> None:
        if self.query_one(Footer).children:  # the footer's keys come in a later layout: the first frame is
            self._open()  # the one with them

    def _open(self) -> None:
        if self._opening:
            return
        self._opening = True
        self.screen_layout_refresh_signal.unsubscribe(self)
        if self.open_dashboard is not None:
            self.call_after_refresh(self.open_dashboard)  # once painted
