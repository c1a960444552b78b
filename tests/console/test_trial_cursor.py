"""The leaderboard's trial cursor is reached and moved with the keyboard alone, and `x` acts on the trial
it is on, saying which."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import make_app, settle
from test_leaderboard_pane import NARROW, TUNE, WIDE, tune_home

from trainconsole import protocol
from trainconsole.console.widgets.leaderboard import Leaderboard


@pytest.mark.parametrize(("size", "keys"), [(WIDE, ["tab"]), (NARROW, ["2", "tab", "tab"])])
async def test_tab_then_arrows_choose_the_trial_x_stops(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        size: tuple[int, int], keys: list[str]) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("TRAINCONSOLE_HOME", str(home))
    app = make_app(tune_home(home))
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
        assert isinstance(app.focused, Leaderboard)
        await pilot.press("down", "down")  # from the best trial (#2) past #1 to #5, running
        await pilot.pause(0.5)  # a redraw of the rows keeps the cursor on the chosen trial
        await pilot.press("x")
        await pilot.pause()
        told = [n.message for n in app._notifications]
    assert protocol.trial_stops_requested(home / "runs" / TUNE) == {"ab12_00005"}
    assert any("trial #5" in text for text in told), told
