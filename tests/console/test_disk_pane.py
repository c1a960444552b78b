"""A full disk in the console: the run's row and log say `paused: disk full` / `lost: disk full`, and the
devices pane shows the runs home's free space, in red below what the next checkpoint needs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import T0, make_app, settle, until, write_run

from console.services import gpu
from console.widgets.gpu_bars import GpuBars
from console.widgets.runs_table import RunsTable
from trainers import protocol

PAUSED = "20240305-140000-paused-d15c"
WARNING = {"t": T0 + 5, "type": "warning", "code": "disk_full", "path": "/x/runs/r/checkpoints/last.pt",
           "free_bytes": 0, "message": "no space left on /x to write last.pt (0B free): the run is paused",
           "hint": "free space on that filesystem"}


async def test_a_run_on_a_full_disk_says_so_in_its_row_and_log(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("TRAINCONSOLE_HOME", str(home))
    write_run(home, PAUSED, [{"t": T0, "type": "started", "strategy": "single", "devices": ["cpu"]}, WARNING],
              info={"pid": os.getpid(), "pid_started": None})
    app = make_app(home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        table = app.main.query_one(RunsTable)
        cells = dict(await until(pilot, lambda: table._cells, 20, "the run's row"))
        assert cells[PAUSED][1] == "lost: disk full"  # no live process recorded: lost, and why
        notes = [n.text for n in app.board.runs[PAUSED].notes]
        assert any(text.startswith("paused: disk full; [disk_full] no space left") for text in notes)
        status = next(k for k in table.columns if k.value == "status")
        assert table.columns[status].width >= len("lost: disk full")  # the column widens to say it whole
    from console.cli_render import table as ls_table
    from console.control import runs

    row = runs.summary(protocol.RunDir(home / "runs" / PAUSED))  # ls says what the console says
    assert row["status"] == "lost" and row["paused"] == "disk full"
    assert ls_table([row]).splitlines()[1].split("  ")[1] == "lost: disk full"


def test_the_devices_pane_shows_the_homes_free_space_in_red_below_a_checkpoint(tmp_path: Path) -> None:
    home = tmp_path / "home"
    last = home / "runs" / "r" / "checkpoints" / "last.pt"
    last.parent.mkdir(parents=True)
    last.write_bytes(b"\0" * 4096)
    disk = gpu.NvmlSampler(home).sample({}).disk
    stat = os.statvfs(home)
    assert disk is not None and disk.needed == 4096 and disk.total == stat.f_blocks * stat.f_frsize
    assert not disk.low and 0 < disk.free <= disk.total
    bars = GpuBars()
    bars.devices = gpu.Devices(note="", disk=gpu.Disk(str(home), 10 << 20, 100 << 30, 20 << 20))
    lines = bars.render().split("\n")  # at the pane's narrowest (30 columns), nothing cut
    at = next(i for i, line in enumerate(lines) if line.plain.startswith("disk "))
    assert lines[at].plain == "disk 10M free of 100G" and lines[at].spans[0].style == "bold red"
    assert lines[at + 1].plain == "  a checkpoint needs 20M" and lines[at + 1].spans[0].style == "bold red"
    bars.devices = gpu.Devices(note="", disk=gpu.Disk(str(home), 30 << 20, 100 << 30, 20 << 20))
    line = next(line for line in bars.render().split("\n") if line.plain.startswith("disk "))
    assert line.plain == "disk 30M free of 100G" and line.spans[0].style == "dim"

