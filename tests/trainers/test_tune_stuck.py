"""A search whose trials wait with nothing running, provoked for real: its Ray is given no CPU
(`RAY_OVERRIDE_RESOURCES`, Ray's own switch) while every trial asks for one, so Tune can place none and
would wait for ever. The search says so, restarts once on a fresh Ray, then ends `stopped` by itself;
`resume` on a Ray of the right size continues it to the end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest
from processes import gone, wait_for

EXE = str(Path(sys.executable).parent / "trainconsole")
pytestmark = pytest.mark.slow


def cli(*args: str, env: dict[str, str] | None = None,
        timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EXE, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def events_of(home: Path, run_id: str) -> list[dict[str, Any]]:
    path = home / "runs" / run_id / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def session_left(sid: int) -> list[int]:
    """Live processes of the run's session (the run starts as a session leader; Ray's stay in it)."""
    left = []
    for proc in psutil.process_iter():
        try:
            if os.getsid(proc.pid) == sid and proc.status() != psutil.STATUS_ZOMBIE:
                left.append(proc.pid)
        except (OSError, psutil.Error):
            continue
    return left


def test_trials_pending_with_nothing_running_are_said_and_the_search_ends_by_itself(home: Path) -> None:
    starved = {"RAY_OVERRIDE_RESOURCES": json.dumps({"CPU": 0}), "TRAINCONSOLE_TUNE_STUCK_S": "4"}
    out = cli("tune", "examples/tune_digits_random_asha.toml", "--set", "tune.num_samples=2",
              "--set", "tune.max_t=1", "--set", "tune.scheduler='none'", "--set", "tune.max_concurrent=1",
              env=starved)
    assert out.returncode == 0, out.stderr
    run_id = out.stdout.split()[0]
    info = json.loads((home / "runs" / run_id / "run.json").read_text())
    ended = ("finished", "failed", "stopped", "killed")
    try:
        wait_for(lambda: any(e["type"] in ended for e in events_of(home, run_id)), 400, "the search's end")
    finally:
        if not gone([info["pid"]]):
            cli("kill", run_id)
    events = events_of(home, run_id)
    codes = [e.get("code") for e in events if e["type"] == "warning"]
    assert codes.count("trials_stuck") == 2 and "search_restarted" in codes, codes
    stuck = next(e for e in events if e.get("code") == "trials_stuck")
    assert stuck["pending"] >= 1 and stuck["ray"].get("CPU", {}).get("free", 0) < 1, stuck
    assert events[-1]["type"] == "stopped" and "pending" in events[-1]["cause"], events[-1]
    last = {e["trial_id"]: e["status"] for e in events if e["type"] == "trial"}
    assert last and set(last.values()) == {"stopped"}, last  # none shows `pending` for ever
    wait_for(lambda: not session_left(info["pid"]), 60, "the search's processes gone")
    shown = cli("logs", run_id)
    assert "trials_stuck" in shown.stdout and "nothing running" in shown.stdout, shown.stdout[-2000:]

    resumed = cli("resume", run_id)  # a Ray of the right size: the saved search goes on to its end
    assert resumed.returncode == 0, resumed.stderr
    seen = len(events)
    try:
        wait_for(lambda: any(e["type"] in ended for e in events_of(home, run_id)[seen:]), 400, "the end")
    finally:
        cli("kill", run_id)
    after = events_of(home, run_id)[seen:]
    assert after[-1]["type"] == "finished", after[-1]
    trained = {e["trial_id"] for e in after if e["type"] == "trial" and e["iteration"] >= 1}
    assert set(last) <= trained and len(trained) == 2, (last, trained)  # the stuck ones, then the rest
    wait_for(lambda: not session_left(json.loads((home / "runs" / run_id / "run.json").read_text())["pid"]),
             60, "the resumed search's processes gone")
