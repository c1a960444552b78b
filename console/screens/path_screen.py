"""Asks for a file path (load or save a run config)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class PathScreen(ModalScreen[str | None]):
    """One input prefilled with a path; enter answers it, escape answers None."""

    BINDINGS = [Binding("escape", "cancel", "cancel")]

    def __init__(self, prompt: str, path: str) -> None:
        super().__init__()
        self.prompt, self.path = prompt, path

    def compose(self) -> ComposeResult:
        """The prompt and the input."""
        with Vertical(id="path-dialog"):
            yield Static(self.prompt)
            yield Input(self.path, id="path-input")
            yield Static("[b]enter[/b] ok    [b]esc[/b] cancel")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Answer with the path typed."""
        event.stop()
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        """Answer None."""
        self.dismiss(None)
