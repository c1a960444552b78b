"""Asks for a file path (load or save a run config), or a line of text (a run's tags, its note)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class PathScreen(ModalScreen[str | None]):
    """One input prefilled with a path (or text); enter answers it, escape answers None. An empty answer
    is None too, unless `empty_ok` (a note removed, no tags left)."""

    BINDINGS = [Binding("escape", "cancel", "cancel")]

    def __init__(self, prompt: str, path: str, empty_ok: bool = False) -> None:
        super().__init__()
        self.prompt, self.path, self.empty_ok = prompt, path, empty_ok

    def compose(self) -> ComposeResult:
        """The prompt and the input."""
        with Vertical(id="path-dialog"):
            yield Static(self.prompt)
            yield Input(self.path, id="path-input")
            yield Static("[b]enter[/b] ok    [b]esc[/b] cancel")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Answer with the path typed."""
        event.stop()
        self.dismiss(event.value.strip() if self.empty_ok else event.value.strip() or None)

    def action_cancel(self) -> None:
        """Answer None."""
        self.dismiss(None)
