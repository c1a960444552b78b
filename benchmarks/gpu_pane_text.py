"""The devices pane (trainconsole/console/widgets/gpu_bars.py) drawn as plain text for `make gpu-check`'s
report: in a
headless Textual app where Textual is installed, else by the widget's own render() with a stand-in for
Textual's Widget (a GPU box's python has rich but no Textual)."""

from __future__ import annotations

import sys
from typing import Any


def pane_text_without_textual(devices: Any, labels: dict[str, str], width: int = 80) -> str:
    """The devices pane's own render() where Textual is not installed (a GPU box's python): a stand-in
    for textual.widget.Widget gives it a size and swallows refreshes; rich draws the result."""
    import io
    import types

    from rich.console import Console

    class Widget:
        def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
            self.size = types.SimpleNamespace(width=width, height=20)

        def refresh(self, *args: Any, **kwargs: Any) -> None:
            """Nothing to repaint outside an app."""

    stub = types.ModuleType("textual.widget")
    stub.Widget = Widget  # type: ignore[attr-defined]
    sys.modules.setdefault("textual", types.ModuleType("textual"))
    sys.modules.setdefault("textual.widget", stub)
    from trainconsole.console.widgets.gpu_bars import GpuBars

    bars = GpuBars()
    bars.show(devices, labels)
    out = Console(width=width, file=io.StringIO(), record=True, color_system=None)
    out.print(bars.render())
    return out.export_text()


def pane_text(devices: Any, labels: dict[str, str], width: int = 80) -> str:
    """The devices pane (trainconsole/console/widgets/gpu_bars.py) drawing `devices`, as plain text."""
    import asyncio
    import io

    from rich.console import Console
    from textual.app import App, ComposeResult

    from trainconsole.console.widgets.gpu_bars import GpuBars

    class Pane(App[None]):
        def compose(self) -> ComposeResult:
            yield GpuBars()

    async def draw() -> str:
        app = Pane()
        async with app.run_test(size=(width, 20)) as pilot:
            bars = app.query_one(GpuBars)
            bars.show(devices, labels)
            await pilot.pause()
            out = Console(width=width, file=io.StringIO(), record=True, color_system=None)
            out.print(bars.render())
            return out.export_text()

    return asyncio.run(draw())
