"""A frame that changes many cells of the runs table (20 live runs: each one's loss and more) refreshes the
table once, not once a cell, and the screen shows every new text."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult

from trainconsole.console.widgets.runs_table import RunsTable


class TableApp(App[None]):
    def compose(self) -> ComposeResult:
        yield RunsTable(id="runs")


def rows(step: int) -> list[tuple[str, tuple[str, ...]]]:
    return [(f"20240101-{i:06d}-live-{i:04x}", (f"live·{i:04x}", "running", "single", "1/5", loss(step, i),
                                                "-", f"{2000 + step:,}", f"{step}s"))
            for i in range(20)]


def loss(step: int, i: int) -> str:
    return f"{1 + (step + i) % 1000 / 1000:.3f}"


def screen_text(table: RunsTable) -> str:
    return "\n".join("".join(s.text for s in table.render_line(y)) for y in range(table.size.height))


async def test_a_frame_of_twenty_changed_rows_refreshes_the_table_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    app = TableApp()
    async with app.run_test(size=(100, 30)) as pilot:
        table = app.query_one(RunsTable)
        table.update_rows(rows(1))
        await pilot.pause()
        refreshed: list[object] = []
        original = RunsTable.refresh

        def counted(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            refreshed.append(args)
            return original(self, *args, **kwargs)

        monkeypatch.setattr(RunsTable, "refresh", counted)
        table.update_rows(rows(2))  # every row's loss, rate and elapsed changed: 60 cells
        assert len(refreshed) == 1, refreshed
        await pilot.pause()
        text = screen_text(table)
        assert all(loss(2, i) in text for i in range(20)) and "2,002" in text
        assert "2,001" not in text and "1s" not in text
        refreshed.clear()
        table.update_rows(rows(2))  # nothing changed: no refresh
        assert refreshed == []
