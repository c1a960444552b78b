"""The tune leaderboard in a real terminal (tmux, 80x24 and 120x40): trials ranked by the tune metric."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from test_console_tmux import EXE, Terminal, term  # noqa: F401 - the fixture

from trainconsole.protocol import RunDir, defaults, dumps

SPACE = '[tune]\nsearch = "random"\nmetric = "val_acc"\nmode = "max"\n[tune.space]\n' \
        '"train.lr" = { loguniform = [0.001, 0.3] }\n'


def write_search(home: Path) -> str:
    """A finished tune run: trial #1 reaches 0.90, #2 0.97 (the best), #3 was cut by ASHA at 0.41."""
    (home / "runs").mkdir(parents=True, exist_ok=True)
    run = RunDir.create(home, "20240305-131500-tune-digits-5e5e")
    run.config.write_text(dumps(defaults()) + SPACE)
    t0 = time.time() - 60
    run.write_info({"id": run.id, "name": "tune-digits", "kind": "tune", "strategy": "tune", "started_at": t0,
                    "ended_at": t0 + 50, "pid": None})
    events = [{"type": "started", "metric": "val_acc", "mode": "max"}]
    for number, accs, last in ((1, (0.7, 0.9), "terminated"), (2, (0.8, 0.97), "terminated"),
                               (3, (0.41,), "stopped_early")):
        for it, acc in enumerate(accs, start=1):
            status = last if it == len(accs) else "running"
            events.append({"type": "trial", "trial_id": f"ab12_0000{number}", "number": number,
                           "status": status, "iteration": it, "config": {"lr": 0.01 * number},
                           "metrics": {"val_acc": acc}})
    events.append({"type": "finished", "best_trial": "ab12_00002", "best_val_acc": 0.97})
    run.events.write_text("".join(json.dumps({"v": 1, "t": t0 + i, "run": run.id, **e}) + "\n"
                                  for i, e in enumerate(events)))
    return run.id


def ranked(screen: str) -> list[str]:
    """The trial numbers in the order the leaderboard shows them."""
    return re.findall(r"#(\d)\s+(?:done|cut@\d|running)", screen)


def test_the_leaderboard_ranks_trials_at_80x24_and_120x40(term: Terminal, home: Path) -> None:  # noqa: F811
    write_search(home)
    term.open("wide", EXE)
    # The footer is recomposed after the frame that drew the leaderboard: wait for both.
    screen = term.wait("wide", lambda s: len(ranked(s)) == 3 and "t Train" in s, "the leaderboard at 120x40")
    assert ranked(screen) == ["2", "1", "3"] and "★" in screen and "cut@1" in screen
    assert "x Stop trial" in screen
    term.open("narrow", EXE)
    term.tmux("resize-window", "-t", "narrow", "-x", "80", "-y", "24")
    term.wait("narrow", lambda s: "1 Runs" in s and "finished" in s, "the console at 80x24")
    term.keys("narrow", "2")
    screen = term.wait("narrow", lambda s: len(ranked(s)) == 3, "the leaderboard tab at 80x24")
    assert ranked(screen) == ["2", "1", "3"]
