"""What the dashboard's frames leave alone: a device sample with no other host in the home lays out no
screen (the hidden hosts' pane stays hidden; each layout held the live frames ~10 ms, twice a second,
benchmarks/console_live.py), and a frame that is due is drawn without a timer's wait."""

from __future__ import annotations

from pathlib import Path

from conftest import NOW, RUNNING, make_app, settle, until

from trainconsole.console.widgets.host_groups import HostGroups
from trainconsole.console.widgets.runs_table import RunsTable


async def test_without_other_hosts_a_device_sample_lays_out_no_screen(fixture_home: Path) -> None:
    app = make_app(fixture_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        main, layouts = app.main, []
        panes = main.frames.panes
        assert panes is not None and app.devices is not None
        assert not main.query_one(HostGroups).display
        main.screen_layout_refresh_signal.subscribe(main, layouts.append)
        for second in range(4):  # a new sample each half second; the hosts' ages move each second
            panes.show_devices(app.devices, (), main.frames.labels, NOW + second)
            await pilot.pause()
        assert layouts == []
        assert not main.query_one(HostGroups).display


async def test_a_due_frame_waits_for_no_timer(fixture_home: Path) -> None:
    app = make_app(fixture_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        frames, table = app.main.frames, app.main.query_one(RunsTable)
        await until(pilot, lambda: RUNNING in table._cells, 20, "the first rows")
        await pilot.pause(2 * 0.05)  # the last frame is long past
        app.board.runs[RUNNING].name = "renamed"
        app.board.touch(RUNNING)
        frames.schedule()
        assert frames._frame_timer is True  # (not a Timer: drawn once this handler returns)
        await pilot.pause()
        assert "renamed" in "".join(map(str, table._cells[RUNNING]))


async def test_the_clocks_tick_is_drawn_with_the_next_frame_or_soon_after(fixture_home: Path) -> None:
    """Issue 47: the clock's tick (each second: elapsed times move on) drew a frame of its own between two
    reads' frames, and the next read's frame then waited FRAME_S for it. It waits TICK_S for a read's frame
    to draw it, and draws it itself only if none came."""
    app = make_app(fixture_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        frames, table = app.main.frames, app.main.query_one(RunsTable)
        await until(pilot, lambda: RUNNING in table._cells, 20, "the first rows")
        app.tailer.stop()
        await pilot.pause(2 * 0.05)
        app.board.runs[RUNNING].name = "renamed"  # (as its elapsed time would move on)
        app.board.touch(RUNNING)
        app._tick()
        assert frames._frame_timer is None and frames._tick_timer is not None  # no frame of its own yet
        await until(pilot, lambda: "renamed" in "".join(map(str, table._cells[RUNNING])), 5,
                    "the tick's frame")
        await pilot.pause(2 * 0.05)
        app.board.runs[RUNNING].name = "again"
        app.board.touch(RUNNING)
        app._tick()
        frames.schedule()  # a read's frame, due at once
        await pilot.pause()
        assert "again" in "".join(map(str, table._cells[RUNNING]))
        assert frames._tick_timer is None  # drawn by the read's frame: the tick's own is dropped
