"""A pane that must ask the user for a line (a config's path, a run's tags or note) posts `AskLine`; the
dashboard shows the dialog and hands the answer back. So a pane owns its key without knowing the screens."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from textual.message import Message


@dataclass
class AskLine(Message):
    """Ask for one line: `prompt` over an input holding `text`; `answer` gets what was typed (None:
    cancelled, and an empty line too unless `empty_ok`)."""

    prompt: str
    text: str
    answer: Callable[[str | None], None]
    empty_ok: bool = False
