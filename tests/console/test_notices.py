"""A notice when a run ends or warns, seen live: a toast (and the bell when asked for), never for the
history a console replays when it opens."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import psutil
from conftest import FAILED, LOST, RUNNING, T0, make_app, settle, training, until, write_run

from trainconsole.console.core.board import label

TROUBLES = ("finished", "failed", "out of memory", "lost", "memory leak", "stopped", "killed")


def told(app) -> list[str]:
    return [n.message for n in app._notifications]


def append(home: Path, run_id: str, *events: dict) -> None:
    with open(home / "runs" / run_id / "events.jsonl", "a") as f:
        f.write("".join(json.dumps({"v": 1, "run": run_id, "t": T0 + 9999, **e}) + "\n" for e in events))


async def test_live_ends_and_warnings_are_told_and_the_replayed_history_is_not(fixture_home: Path) -> None:
    sleeper = subprocess.Popen(["sleep", "600"])
    gone = "20240305-131500-small-cnn-digits-dead"
    write_run(fixture_home, gone, training(T0 + 9000, 100, 5),
              info={"pid": sleeper.pid, "pid_started": psutil.Process(sleeper.pid).create_time()})
    app = make_app(fixture_home)
    app.ring, rings = True, []
    app.bell = lambda: rings.append(1)  # type: ignore[method-assign]
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            await pilot.pause(1.5)  # a scan or two: liveness asked again
            # FAILED failed (out of memory first) and LOST is lost, but before this console opened
            assert not [m for m in told(app) if any(word in m for word in TROUBLES)], told(app)
            assert app.board.runs[LOST].status == "lost" and app.board.runs[FAILED].status == "failed"
            append(fixture_home, RUNNING, {"type": "warning", "code": "memory_leak",
                                           "message": "host memory grew 300 MiB in 5 epochs"},
                   {"type": "finished", "best_val_acc": 0.9712})
            name = label(app.board.runs[RUNNING])
            await until(pilot, lambda: f"{name}: finished, best val acc 0.9712" in told(app), 5, "finished")
            assert f"{name}: a memory leak: host memory grew 300 MiB in 5 epochs" in told(app)
            assert rings
            sleeper.kill()
            sleeper.wait()
            await until(pilot, lambda: any(m.startswith(label(app.board.runs[gone]) + ": lost")
                                           for m in told(app)), 5, "the lost run told")
    finally:
        sleeper.kill()


def test_the_bell_is_off_unless_asked_for(fixture_home: Path, monkeypatch) -> None:
    assert make_app(fixture_home).ring is False
    monkeypatch.setenv("TRAINCONSOLE_BELL", "1")
    assert make_app(fixture_home).ring is True
    monkeypatch.setenv("TRAINCONSOLE_BELL", "0")
    assert make_app(fixture_home).ring is False
