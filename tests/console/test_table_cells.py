"""The runs table renders a cell again only when its text or place changed: a live run's new loss redraws
that cell, not every visible cell, and the screen shows the new text. It draws its rows itself, and plain
cells without Rich: every line it draws is the line DataTable draws, character by character, style by
style, in every state a line can be in."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.coordinate import Coordinate

from trainconsole.console.core.columns import COLUMNS
from trainconsole.console.widgets.runs_table import RunsTable


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
        original = RunsTable._draw_cell

        def counted(self, cell, row_index, column_index, *args, **kwargs):  # type: ignore[no-untyped-def]
            rendered.append((row_index, column_index))
            return original(self, cell, row_index, column_index, *args, **kwargs)

        monkeypatch.setattr(RunsTable, "_draw_cell", counted)
        table.update_rows(rows(["0.50", "0.39", "0.30"]))  # run 1's loss changed, nothing else
        await pilot.pause()
        text = screen_text(app)
        assert "0.39" in text and "0.40" not in text
        loss = [key for key, _ in COLUMNS].index("loss")
        assert set(rendered) == {(1, loss)}, rendered
        rendered.clear()
        screen_text(app)  # nothing changed: nothing rendered again
        assert rendered == []


def many(n: int, host: bool = False) -> list[tuple[str, tuple[str, ...]]]:
    statuses = ["running", "finished", "failed", "paused: disk full", "queued", "lost", "killed", "stopped"]
    out = []
    for i in range(n):
        label = f"resnet18-cifar10·{i:04x}" + (" #baseline #lr-sweep-long-tag" if i % 3 == 0 else "")
        loss = f"{1 / (i + 3):.{i % 9}f}" if i % 5 else "-"  # (some wider than the column: cut)
        cells = (label, statuses[i % len(statuses)], ["single", "ddp", "tune 4/8"][i % 3], f"{i % 7}/9", loss,
                 f"{(i * 7) % 100}%" if i % 2 else "", f"{i * 123:,}", f"{i}:{i % 60:02d}:0{i % 10}")
        out.append((f"20240101-{i:06d}-run-{i:04x}", (*cells, "gpu-box-7") if host else cells))
    return out


def drawn(table: RunsTable, fast: bool, fresh: bool = True) -> list[list[tuple[str, object]]]:
    """Every visible line of the table as (character, style) pairs, drawn one way or the other (`fresh`:
    nothing kept from earlier draws)."""
    table.FAST = fast
    if fresh:
        table._clear_caches()
    lines = table.render_lines(table.region.reset_offset)  # (as the compositor asks for them)
    return [[(ch, segment.style) for segment in strip for ch in segment.text] for strip in lines]


async def test_the_table_draws_every_line_as_datatable_does() -> None:
    app = TableApp()
    async with app.run_test(size=(120, 16)) as pilot:
        table = app.query_one(RunsTable)
        checked = shaped = 0
        for host, width in ((False, 120), (True, 120), (False, 70)):
            await pilot.resize_terminal(width, 16)
            table.update_rows(many(40, host))
            await pilot.pause()
            for cursor, hover, focused, scroll in ((0, -1, True, 0), (3, 5, True, 0), (4, 4, False, 0),
                                                   (25, 2, True, 20), (39, -1, False, 30)):
                table.move_cursor(row=cursor, animate=False)
                table.hover_coordinate = Coordinate(hover, 0)
                table._show_hover_cursor = hover >= 0
                if focused:
                    table.focus()
                else:
                    app.set_focus(None)
                table.scroll_to(y=scroll, animate=False)
                await pilot.pause()
                fast = drawn(table, True)
                shaped += sum(shape is not None for shape in table._shapes.values())
                slow = drawn(table, False)
                assert len(fast) == table.size.height
                for y, (a, b) in enumerate(zip(fast, slow, strict=True)):
                    assert a == b, (host, width, cursor, hover, focused, scroll, y)
                checked += len(fast)
        assert checked >= 150
        assert shaped >= 100, "few cells drawn from their shapes: the test compares DataTable with itself"
        table.move_cursor(row=3, animate=False)  # a new theme: nothing kept from the old one is drawn
        await pilot.pause()
        before = drawn(table, True)
        app.theme = "textual-light" if app.theme != "textual-light" else "nord"
        await pilot.pause()
        after, slow = drawn(table, True, fresh=False), drawn(table, False)
        assert after == slow and after != before
