"""`?`: every key the console answers to."""

from __future__ import annotations

from rich.table import Table
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

#: Keys the help screen lists that are no binding of ours (the runs table's and the form's own), by context.
OTHER_KEYS = [("dashboard", "↑ ↓ pgup pgdn", "Move the selection in the runs pane"),
              ("dashboard", "enter", "In the runs pane: show the run's plot; in the form: launch")]

Section = tuple[str, list[Binding]]


def key_rows(sections: list[Section]) -> list[tuple[str, str, str]]:
    """(context, key, what it does) for every binding a user can press: each key as shown, its tooltip or
    description; a hidden binding of an action already listed (`[` beside `] Layer`) and the system's
    own (the dashboard's "why not" answers) are left out."""
    rows: list[tuple[str, str, str]] = []
    for context, bindings in sections:
        listed = {b.action.split("(")[0] for b in bindings if b.show}
        for b in bindings:
            if b.system or (not b.show and b.action.split("(")[0] in listed):
                continue
            rows.append((context, b.key_display or b.key.replace(",", " "), b.tooltip or b.description))
    return rows


class HelpScreen(ModalScreen[None]):
    """A table of keys and what they do; any of escape, ? or q closes it."""

    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "close", show=False)]

    def __init__(self, rows: list[tuple[str, str, str]]) -> None:
        super().__init__()
        self.rows = rows

    @classmethod
    def of(cls, sections: list[Section]) -> HelpScreen:
        """The help for these screens' bindings, then OTHER_KEYS, grouped by the context they act in."""
        rows = key_rows(sections) + OTHER_KEYS
        order = list(dict.fromkeys(context for context, _ in sections))
        return cls(sorted(rows, key=lambda row: order.index(row[0]) if row[0] in order else len(order)))

    def compose(self) -> ComposeResult:
        """The key table, with a line on what quitting does."""
        table = Table(box=None, show_header=False, padding=(0, 2, 0, 0))
        table.add_column(style="bold cyan", no_wrap=True)
        table.add_column()
        context = None
        for where, key, description in self.rows:
            if where != context:
                table.add_row("", f"[bold]{where}[/]" if context is None else f"\n[bold]{where}[/]")
                context = where
            table.add_row(key, description)
        with VerticalScroll(id="help"):
            yield Static(table)
            yield Static("\nRuns are separate processes: quitting or losing the terminal never stops them.\n"
                         "Press escape to close.", classes="dim")

    def on_mount(self) -> None:
        """Title the dialog."""
        self.query_one("#help").border_title = "keys"


def show_help(app: App[object]) -> None:
    """`?` from any screen: every key of every screen, by where it acts (the same list wherever it is
    asked), generated from the screens' own bindings (`help_sections`: the app's) so it cannot drift
    from them."""
    app.push_screen(HelpScreen.of(app.help_sections()))  # type: ignore[attr-defined]
