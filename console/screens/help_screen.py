"""`?`: every key the console answers to."""

from __future__ import annotations

from rich.table import Table
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

#: Keys the help screen lists that are no binding of ours (the runs table's and the form's own).
OTHER_KEYS = [("↑ ↓ pgup pgdn", "Move the selection in the runs pane"),
              ("enter", "In the runs pane: show the run's plot; in the form: launch")]


class HelpScreen(ModalScreen[None]):
    """A table of keys and what they do; any of escape, ? or q closes it."""

    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "close", show=False)]

    def __init__(self, keys: list[tuple[str, str]]) -> None:
        super().__init__()
        self.keys = keys

    @classmethod
    def of(cls, bindings: list[Binding]) -> HelpScreen:
        """The help for these bindings (each key as shown, its tooltip or description), then OTHER_KEYS."""
        keys = [(b.key_display or b.key.replace(",", " "), b.tooltip or b.description) for b in bindings]
        return cls(keys + OTHER_KEYS)

    def compose(self) -> ComposeResult:
        """The key table, with a line on what quitting does."""
        table = Table(box=None, show_header=False, padding=(0, 2, 0, 0))
        table.add_column(style="bold cyan", no_wrap=True)
        table.add_column()
        for key, description in self.keys:
            table.add_row(key, description)
        with VerticalScroll(id="help"):
            yield Static(table)
            yield Static("\nRuns are separate processes: quitting or losing the terminal never stops them.\n"
                         "Press escape to close.", classes="dim")

    def on_mount(self) -> None:
        """Title the dialog."""
        self.query_one("#help").border_title = "keys"


def show_help(app: App[object]) -> None:
    """`?` from any screen: every key of the dashboard and the app (the same list wherever it is asked)."""
    from console.screens.keys import help_keys

    app.push_screen(HelpScreen.of(help_keys([b for b in app.BINDINGS if isinstance(b, Binding)])))
