"""The devices pane with other hosts in the home: their snapshots (the simulated NVML, as their watchdogs
would publish it) drawn below this host's, each GPU split by run with the run's name, where the next run
fits, a silent host greyed with its age; a line per host when narrow, expanded on asking. Files are read
only when they change, and not at all while the pane is hidden."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import NOW, make_app, settle, steady_cursors, until

from trainconsole.console.services.host_devices import OtherHosts
from trainconsole.console.widgets.host_groups import HostGroups
from trainconsole.protocol import host_devices, nvml
from trainconsole.protocol.places import host as hosts

NARROW, WIDE = (80, 24), (160, 50)
HERE = "gpu-box-a"


def publish(home: Path, host: str, gpus: int, runs: dict[str, str], age: float) -> None:
    """What `host`'s watchdog would have written `age` seconds before the tests' frozen now."""
    reading = nvml.simulated(gpus, runs)
    host_devices.write(home, host_devices.HostSnapshot(
        host, NOW - age, reading.gpus, reading.host or nvml.Host(24 << 30, 64 << 30), reading.note, runs))


@pytest.fixture
def three_hosts(fixture_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This host (2 simulated GPUs, the console's own sampler), one with 1 GPU and two runs, one with 3
    GPUs and one run, and one silent for 100 s (longer than the 30 s a heartbeat may be silent)."""
    monkeypatch.setattr(hosts, "this_host", lambda: HERE)
    monkeypatch.setenv("TRAINCONSOLE_HEARTBEAT_SILENCE_S", "30")
    publish(fixture_home, HERE, 2, {}, 1)  # this host's own file: the console samples itself instead
    two = {"20240305-131500-vit-b1": "vit-b1", "20240305-131600-gpt-b2": "gpt-b2"}
    publish(fixture_home, "gpu-box-b", 1, two, 2)
    publish(fixture_home, "gpu-box-c", 3, {"20240305-131700-resnet50-c1": "resnet50-c1"}, 4)
    publish(fixture_home, "gpu-box-d", 0, {"20240305-121700-cnn-d1": "cnn-d1"}, 100)
    return fixture_home


async def focus_hosts(pilot: Any) -> HostGroups:
    """Tab to the hosts (as a user would: the devices pane focuses nothing when it opens)."""
    groups = pilot.app.main.query_one(HostGroups)
    for _ in range(8):
        if pilot.app.focused is groups:
            return groups
        await pilot.press("tab")
    raise AssertionError(f"tab never reached the hosts: {pilot.app.focused}")


def with_hosts(*keys: str, expand: bool = False) -> Any:
    """Settle, press keys, wait until the other hosts are drawn (expanded: tab to them, enter), then draw
    the frame."""
    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press(*keys)
        await until(pilot, lambda: pilot.app.main.query_one(HostGroups).others, 30, "the other hosts")
        if expand:
            await focus_hosts(pilot)
            await pilot.press("enter")
            await pilot.pause()
        pilot.app.main.frames.draw_frame()
        await steady_cursors(pilot)

    return run_before


class TestSnapshots:
    def test_other_hosts_narrow_a_line_each(self, snap_compare, three_hosts: Path) -> None:
        """80x24: this host's bars, free memory per fresh host, then a line per other host."""
        assert snap_compare(make_app(three_hosts), terminal_size=NARROW, run_before=with_hosts("3"))

    def test_other_hosts_narrow_expanded(self, snap_compare, three_hosts: Path) -> None:
        """80x24, enter on the hosts: each host's group whole (the pane scrolls)."""
        assert snap_compare(make_app(three_hosts), terminal_size=NARROW,
                            run_before=with_hosts("3", expand=True))

    def test_other_hosts_wide(self, snap_compare, three_hosts: Path) -> None:
        """160x50: a group per host, a bar per GPU split by run; the silent host greyed, not in the fits."""
        assert snap_compare(make_app(three_hosts), terminal_size=WIDE, run_before=with_hosts())


async def test_a_click_on_a_hosts_line_expands_it_and_the_fits_leave_out_a_silent_host(
        three_hosts: Path) -> None:
    app = make_app(three_hosts)
    async with app.run_test(size=NARROW) as pilot:
        await settle(pilot)
        await pilot.press("3")
        groups = app.main.query_one(HostGroups)
        await until(pilot, lambda: groups.others, 30, "the other hosts")
        assert [s.host for s in groups.others] == ["gpu-box-b", "gpu-box-c", "gpu-box-d"]
        plain = groups.render().plain
        assert "▸ gpu-box-b  gpu0 70G free · vit-b1, gpt-b2 · 2s ago" in plain
        assert "▸ gpu-box-d  cnn-d1 · silent 100s" in plain  # silent: nothing said free there
        assert "GPU2" not in plain
        row = groups._line_hosts.index("gpu-box-c")
        await pilot.click(HostGroups, offset=(2, row))
        await pilot.pause()
        assert groups.expanded == {"gpu-box-c"}
        assert "GPU2 util 75%  Simulated H100" in groups.render().plain
        await focus_hosts(pilot)
        await pilot.press("enter")
        assert groups.expanded == {"gpu-box-b", "gpu-box-c", "gpu-box-d"}
        assert "█ cnn-d1 512M" in groups.render().plain


async def test_wide_where_it_fits_names_every_fresh_host_not_a_silent_one(three_hosts: Path) -> None:
    app = make_app(three_hosts)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        groups = app.main.query_one(HostGroups)
        await until(pilot, lambda: groups.others, 30, "the other hosts")
        lines = groups.render().plain.split("\n")
        assert [line.split()[0] for line in lines[2:5]] == [HERE, "gpu-box-b", "gpu-box-c"]
        assert lines[5] == "▸ gpu-box-d  cnn-d1 · silent 100s"  # greyed, and nothing said free there
        assert lines[6] == "gpu-box-b  2s ago"  # its group: a heading, then its GPU's bar split by run
        assert "GPU2 util 75%  Simulated H100" in lines


def test_only_changed_snapshots_are_read(tmp_path: Path) -> None:
    publish(tmp_path, "b", 1, {"r1": "one"}, 0)
    publish(tmp_path, "c", 2, {}, 0)
    publish(tmp_path, HERE, 2, {}, 0)
    others = OtherHosts(tmp_path, HERE)
    assert [s.host for s in others.look(NOW)] == ["b", "c"] and others.reads == 2
    assert [s.host for s in others.look(NOW)] == ["b", "c"] and others.reads == 2  # a stat each, no read
    publish(tmp_path, "b", 1, {"r1": "one", "r2": "two"}, -5)
    (first, _) = others.look(NOW)
    assert others.reads == 3 and set(first.names) == {"r1", "r2"}
    host_devices.path(tmp_path, "c").unlink()
    assert [s.host for s in others.look(NOW)] == ["b"]


async def test_nothing_is_read_while_the_pane_is_hidden(three_hosts: Path) -> None:
    app = make_app(three_hosts)
    async with app.run_test(size=NARROW) as pilot:
        await settle(pilot)
        await pilot.pause(1.5)  # three samples with the runs pane shown
        assert not app.devices_shown and app.other_hosts == ()
        await pilot.press("3")
        await until(pilot, lambda: app.other_hosts, 30, "the other hosts, once the pane shows")
