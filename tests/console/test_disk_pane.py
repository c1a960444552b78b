"""A full disk in the console: the run's row and log say `paused: disk full` / `lost: disk full`, and the
devices pane shows the runs home's free space, in red below what the next checkpoint needs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import T0, make_app, settle, until, write_run

from trainconsole import protocol
from trainconsole.console.services import gpu
from trainconsole.console.widgets.gpu_bars import GpuBars
from trainconsole.console.widgets.runs_table import RunsTable

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
    from trainconsole.console.cli_render import table as ls_table
    from trainconsole.control import runs

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



def test_the_devices_pane_says_what_the_homes_runs_and_trash_hold(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from trainconsole.control import Control
    from trainconsole.protocol import index

    home = tmp_path / "home"
    sizes = {"20240101-000000-a-0001": 3000, "20240101-000000-b-0002": 5000, "20240101-000000-c-0003": 7000}
    for run_id, size in sizes.items():
        write_run(home, run_id, [{"t": T0, "type": "started"}, {"t": T0 + 1, "type": "finished"}])
        (home / "runs" / run_id / "checkpoints").mkdir(exist_ok=True)
        (home / "runs" / run_id / "checkpoints" / "last.pt").write_bytes(b"\0" * size)
    control = Control(home)
    control.summaries()  # the index: two runs' sizes come from it, the third's folder changes after
    runs = {run_id: protocol.RunDir(home / "runs" / run_id) for run_id in sizes}
    control.remove([runs["20240101-000000-a-0001"]])  # in the trash: still held
    (home / "runs" / "20240101-000000-c-0003" / "checkpoints" / "best.pt").write_bytes(b"\0" * 11000)
    whole = sum(index.disk_size(p) for p in (home / "runs", home / "trash"))
    assert whole > 3000 + 5000 + 7000 + 11000
    sampler = gpu.NvmlSampler(home)
    disk = sampler.sample({}).disk
    assert disk is not None and disk.home_bytes == whole and disk.needed == 7000
    (home / "runs" / "20240101-000000-b-0002" / "checkpoints" / "last.pt").write_bytes(b"\0" * 9000)
    disk = sampler.sample({"20240101-000000-b-0002": set()}).disk  # a live run's last.pt: at every sample
    assert disk is not None and disk.needed == 9000 and disk.home_bytes == whole  # the sum: every 30 s
    monkeypatch.setattr(gpu, "USAGE_S", 0.0)
    disk = sampler.sample({}).disk
    assert disk is not None and disk.home_bytes == whole + 4000
    bars = GpuBars()
    bars.devices = gpu.Devices(note="", disk=gpu.Disk(str(home), 30 << 20, 100 << 30, 20 << 20, 1536 << 20))
    lines = [line.plain for line in bars.render().split("\n")]
    assert lines[lines.index("disk 30M free of 100G") + 1] == "runs hold 1.5G"
