"""The runs table's filter line (`/`): one input taking the `ls --filter` language, and a line under it
for what is wrong with the filter typed."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Input, Static

PLACEHOLDER = "filter, as ls --filter: lr<0.1 tag:x status:failed -kind:tune (enter: apply, esc: clear)"


class FilterLine(Vertical):
    """Posts `Applied` with the text on enter, `Cleared` on escape; shows an error it is given."""

    BINDINGS = [Binding("escape", "clear", "Clear the filter", show=False)]

    class Applied(Message):
        """Enter in the filter line: show only the runs that match `text`."""

        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    class Cleared(Message):
        """Escape in the filter line: every run again."""

    def compose(self) -> ComposeResult:
        """The input and its error line."""
        yield Input(placeholder=PLACEHOLDER, id="filter-input", compact=True)
        yield Static("", id="filter-error")

    def open(self) -> None:
        """Show the line and put the cursor in it."""
        self.add_class("-open")
        self.query_one(Input).focus()

    def show_error(self, text: str) -> None:
        """One line saying what is wrong (empty: nothing)."""
        error = self.query_one("#filter-error", Static)
        error.update(text)
        error.display = bool(text)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter: apply the filter (an empty one shows every run)."""
        event.stop()
        if event.value.strip():
            self.post_message(self.Applied(event.value))
        else:
            self.action_clear()

    def action_clear(self) -> None:
        """Escape: forget the filter and hide the line."""
        self.query_one(Input).value = ""
        self.show_error("")
        self.remove_class("-open")
        self.post_message(self.Cleared())
