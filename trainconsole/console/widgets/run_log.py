"""The log pane: the selected run's failure (first, and loud), warnings with their hints, milestones."""

from __future__ import annotations

from typing import Any

from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static

from trainconsole.console.core.board import LogView, duration

LEVEL_STYLES = {"info": ("·", "dim"), "warning": ("⚠", "yellow"), "error": ("✖", "bold red")}
TRACEBACK_LINES = 6


class RunLog(Vertical):
    """Shows one run's notes (the newest last, scrolled into view) under its failure, if it failed."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._key: tuple[Any, ...] | None = None

    def compose(self) -> ComposeResult:
        """The failure panel (hidden unless the run failed) above the scrolling notes."""
        yield Static(id="log-failure")
        with VerticalScroll(id="log-scroll"):
            yield Static("no run selected", id="log-text")

    def show(self, log: LogView) -> None:
        """Show a run's notes (times relative to its first event) and its failure, if it failed."""
        title, notes, failure, t0 = log.title, log.notes, log.failure, log.t0
        key = (title, len(notes), notes[-1] if notes else None, failure is not None)
        if key == self._key:
            return
        self._key = key
        self.border_title = title
        self.set_class(failure is not None, "-failed")
        self.query_one("#log-failure", Static).update(_failure_panel(failure) if failure else "")
        body = Table.grid(padding=(0, 1))
        body.add_column(justify="right", no_wrap=True)
        body.add_column(width=1, no_wrap=True)
        body.add_column(ratio=1)
        for note in notes:
            mark, style = LEVEL_STYLES.get(note.level, ("·", ""))
            stamp = "" if t0 is None else "+" + duration(max(0.0, note.t - t0))
            body.add_row(Text(stamp, style=style), Text(mark, style=style),
                         Text(note.text, style=style if note.level == "error" else ""))
            if note.detail:
                body.add_row("", "", Text(f"cause: {note.detail}", style="dim"))
            if note.hint:
                body.add_row("", "", Text(f"hint: {note.hint}", style="italic"))
        if not notes:
            body.add_row("", "", Text("no warnings", style="dim"))
        self.query_one("#log-text", Static).update(body)
        self.query_one("#log-scroll", VerticalScroll).scroll_end(animate=False)


def _failure_panel(failure: dict[str, Any]) -> Panel:
    text = Text(str(failure.get("cause") or "unknown cause"), style="bold")
    if failure.get("at"):  # a script run's probe measured where it failed: `at step 9: cuda:0 7100 MB ...`
        text.append(f"\n{failure['at']}")
    if failure.get("hint"):
        text.append(f"\nhint: {failure['hint']}", style="italic")
    trace = str(failure.get("traceback") or "").rstrip().splitlines()[-TRACEBACK_LINES:]
    if trace:
        text.append("\n" + "\n".join(trace), style="dim")
    return Panel(text, title="FAILED", title_align="left", border_style="red")
