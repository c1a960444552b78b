"""The console's first frame is made without the cycle collector (Textual's imports and first screen make
many objects and free none: ~10 ms of collections, benchmarks/console_startup.py), and the dashboard, and
everything after it, with it."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
from conftest import make_app, until

from trainconsole.console import cli
from trainconsole.console.app import TrainConsole


def test_the_console_opens_with_the_collector_off(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    monkeypatch.setattr(TrainConsole, "run", lambda self, *args, **kwargs: seen.append(gc.isenabled()))
    try:
        assert cli.open_console() == 0
    finally:
        gc.enable()
    assert seen == [False]


async def test_the_dashboard_turns_the_collector_on_again(fixture_home: Path) -> None:
    app = make_app(fixture_home)
    gc.disable()  # as `cli.open_console` leaves it for the first frame
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: app.dashboard, 20, "the dashboard")
            assert gc.isenabled()
    finally:
        gc.enable()
