"""A search killed early (while its Ray starts) and one killed mid-trial: once `trainconsole kill` has
returned, no process of the search is left (the run starts as a session leader, and every process of
it, Ray's included, stays in that session)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest
from processes import wait_for

EXE = str(Path(sys.executable).parent / "trainconsole")
pytestmark = pytest.mark.slow
BOUND_S = 3.0  # the bound: a killed search leaves no process of it within 3 s


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EXE, *args], capture_output=True, text=True, timeout=timeout)


def session(sid: int) -> list[psutil.Process]:
    """Live processes of the run's session, whenever started, whoever their parent now is."""
    found = []
    for proc in psutil.process_iter():
        try:
            if os.getsid(proc.pid) == sid and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (OSError, psutil.Error):
            continue
    return found


def names(procs: list[psutil.Process]) -> list[str]:
    out = []
    for proc in procs:
        try:
            out.append(proc.name())
        except psutil.Error:
            continue
    return out


def first_epoch(home: Path, run_id: str) -> bool:
    path = home / "runs" / run_id / "events.jsonl"
    if not path.exists():
        return False
    events: list[dict[str, Any]] = [json.loads(line) for line in path.read_text().splitlines()]
    return any(e["type"] == "trial" and e.get("iteration", 0) >= 1 for e in events)


@pytest.mark.parametrize("moment", ["early", "mid-trial"])
def test_a_killed_search_leaves_no_process(home: Path, moment: str) -> None:
    out = cli("tune", "examples/tune_digits_random_asha.toml", "--set", "tune.num_samples=4",
              "--set", "tune.max_t=20", "--set", "tune.scheduler='none'", "--set", "tune.reuse_actors=false")
    assert out.returncode == 0, out.stderr
    run_id = out.stdout.split()[0]
    sid = json.loads((home / "runs" / run_id / "run.json").read_text())["pid"]
    try:
        if moment == "early":  # Ray is starting: its first servers are up, the rest not yet
            wait_for(lambda: {"gcs_server", "raylet"} & set(names(session(sid))), 120, "Ray starting")
        else:
            wait_for(lambda: first_epoch(home, run_id), 300, "a trial's first epoch")
        seen = session(sid)
        killed = cli("kill", run_id, timeout=120)
        assert killed.returncode == 0, killed.stderr  # (it waits until every process it found is gone)
        try:
            wait_for(lambda: not session(sid), BOUND_S, "no process of the search left")
        except AssertionError:
            raise AssertionError(f"left after the kill: {names(session(sid))}") from None
        assert len(seen) >= 2, names(seen)  # there was something to kill: the driver and Ray's servers
    finally:
        for proc in session(sid):
            proc.kill()
    row = next(r for r in json.loads(cli("ls", "--json").stdout) if r["id"] == run_id)
    assert row["status"] == "killed"
