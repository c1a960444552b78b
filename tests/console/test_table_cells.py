"""The runs table renders a cell again only when its text or place changed: a live run's new loss redraws
that cell, not every visible cell, and the screen shows the new text."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import DataTable

from console.core.columns import COLUMNS
from console.widgets.runs_table import RunsTable


class TableApp(App[None]):
    def compose(self) -> ComposeResult:
        yield RunsTable(id="runs")


def rows(losses: list[str]) -> list[tuple[str, tuple[str, ...]]]:
    return [(f"20240101-00000{i}-digits-{i:04x}", (f"digits·{i:04x}", "running", "single", "1/5", loss,
                                                   "-", "2,000", f"0:0{i}"))
            for i, loss in enumerate(losses)]


def screen_text(app: App[None]) -> str:
    table = app.query_one(RunsTable)
    return "\n".join("".join(s.text for s in table.render_line(y)) for y in range(table.size.height))


async def test_one_changed_cell_is_the_one_cell_rendered_again(monkeypatch) -> None:
    app = TableApp()
    async with app.run_test(size=(100, 12)) as pilot:
        table = app.query_one(RunsTable)
        table.update_rows(rows(["0.50", "0.40", "0.30"]))
        await pilot.pause()
        assert "0.40" in screen_text(app)
        rendered: list[tuple[int, int]] = []
        original = DataTable._render_cell

        def counted(self, row_index, column_index, *args, **kwargs):  # type: ignore[no-untyped-def]
            rendered.append((row_index, column_index))
            return original(self, row_index, column_index, *args, **kwargs)

        monkeypatch.setattr(DataTable, "_render_cell", counted)
        table.update_rows(rows(["0.50", "0.39", "0.30"]))  # run 1's loss changed, nothing else
        await pilot.pause()
        text = screen_text(app)
        assert "0.39" in text and "0.40" not in text
        loss = [key for key, _ in COLUMNS].index("loss")
        assert set(rendered) == {(1, loss)}, rendered
        rendered.clear()
        screen_text(app)  # nothing changed: nothing rendered again
        assert rendered == []
