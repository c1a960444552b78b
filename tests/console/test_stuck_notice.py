"""A search whose trials wait with nothing running: the console tells it live (a toast and a note in the
log pane), and the `stopped` that ends it says why."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import RUNNING, T0, make_app, settle, until

from trainconsole.console.core.board import label


def told(app) -> list[str]:
    return [n.message for n in app._notifications]


async def test_trials_stuck_is_told_and_the_stop_says_why(fixture_home: Path) -> None:
    app = make_app(fixture_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        with open(fixture_home / "runs" / RUNNING / "events.jsonl", "a") as f:
            for e in ({"type": "warning", "code": "trials_stuck", "pending": 2, "waited_s": 120.4,
                       "message": "2 trial(s) pending with nothing running for 120 s", "hint": "resume"},
                      {"type": "stopped", "trials": 4, "errors": 0,
                       "cause": "trials pending with nothing running"}):
                f.write(json.dumps({"v": 1, "run": RUNNING, "t": T0 + 9999, **e}) + "\n")
        name = label(app.board.runs[RUNNING])
        want = f"{name}: trials wait with nothing running: 2 trial(s) pending with nothing running for 120 s"
        await until(pilot, lambda: want in told(app), 5, "the stuck search told")
        notes = [n.text for n in app.board.runs[RUNNING].notes]
        assert "[trials_stuck] 2 trial(s) pending with nothing running for 120 s" in notes, notes
        assert "stopped: trials pending with nothing running" in notes, notes
