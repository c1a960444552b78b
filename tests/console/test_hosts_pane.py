"""Runs of several hosts in one home: the runs pane gains a host column and the devices pane says its
bars are this host's; with runs of one host neither changes (the snapshots hold that)."""

from __future__ import annotations

from pathlib import Path

from conftest import FINISHED, RUNNING, STOPPED, make_app, settle
from textual.widgets.data_table import ColumnKey

from trainconsole.console.widgets.runs_table import RunsTable
from trainconsole.protocol import RunDir
from trainconsole.protocol.places import host as hosts


async def test_a_second_host_brings_the_host_column(fixture_home: Path) -> None:
    here = hosts.this_host()
    for run_id in (RUNNING, FINISHED):
        RunDir(fixture_home / "runs" / run_id).update_info(host=here)
    app = make_app(fixture_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        table = app.main.query_one(RunsTable)
        assert ColumnKey("host") not in table.columns  # one host: the column would only repeat it
        assert app.main.query_one("#devices").border_title == "devices"

        RunDir(fixture_home / "runs" / STOPPED).update_info(host="gpu-box-2")
        await pilot.pause(1.0)
        await settle(pilot)
        assert ColumnKey("host") in table.columns
        assert str(table.get_cell(STOPPED, "host")) == "gpu-box-2"
        assert str(table.get_cell(RUNNING, "host")) == here
        assert str(table.get_cell(FINISHED, "host")) == here
        assert app.main.query_one("#devices").border_title == f"devices: this host, {here}"
        assert table.selected_id is not None
