"""Helpers for the script-run tests: the CLI as a user runs it, and a run's events and processes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil

EXE = str(Path(sys.executable).parent / "trainconsole")
FIXTURES = Path(__file__).parent / "fixtures"


def cli(*args: str, cwd: Path | None = None, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """Run `trainconsole ARGS` and capture its output."""
    return subprocess.run([EXE, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd)


def start(*args: str, cwd: Path | None = None) -> str:
    """`trainconsole run ARGS`; the new run's id."""
    out = cli("run", *args, cwd=cwd)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()[0]


def events(home: Path, run_id: str) -> list[dict[str, Any]]:
    """Every event in the run's log."""
    path = home / "runs" / run_id / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def of_type(home: Path, run_id: str, kind: str) -> list[dict[str, Any]]:
    """The run's events of one kind."""
    return [e for e in events(home, run_id) if e["type"] == kind]


def status(run_id: str) -> str:
    """The run's status as `trainconsole ls --json` reports it."""
    out = cli("ls", "--json")
    assert out.returncode == 0, out.stderr
    return {row["id"]: row for row in json.loads(out.stdout)}[run_id]["status"]


def tree(home: Path, run_id: str) -> list[psutil.Process]:
    """The run's leader and every descendant, now."""
    info = json.loads((home / "runs" / run_id / "run.json").read_text())
    try:
        leader = psutil.Process(info["pid"])
        return [leader, *leader.children(recursive=True)]
    except psutil.Error:
        return []


def alive(procs: list[psutil.Process]) -> list[psutil.Process]:
    """Those still running (a zombie counts as gone)."""
    def running(p: psutil.Process) -> bool:
        try:
            return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False
    return [p for p in procs if running(p)]


BAR_STATE = r"(?P<n>\d+)/(?P<total>\d+) \[[^\]]*?\b{key}=(?P<value>[0-9.e-]+)[,\]]"


def last_bar_states(text: str, total: int, key: str = "loss") -> dict[int, float]:
    """From a captured tqdm stream: the KEY of the last state drawn at each count of the bars of TOTAL,
    by step (each new bar's counts go on after the step where the one before it ended)."""
    last: dict[int, float] = {}
    base, previous, ended = 0, -1, None
    for match in re.finditer(BAR_STATE.format(key=key), text):
        n = int(match["n"])
        if int(match["total"]) != total:
            continue
        if n < previous:  # a new bar
            base += previous
            ended = base if base in last else None
        previous = n
        if base + n == ended:
            continue  # count 0 of a new bar: the step where the last bar ended, whose state is written
        last[base + n] = float(match["value"])
    return last


def assert_last_states(steps: list[dict[str, Any]], text: str, total: int, key: str = "loss") -> None:
    """Every step event carries the last state drawn at its count, once per step, and every count after
    the first of each bar that showed a loss has its event (no state lost)."""
    numbers = [e["step"] for e in steps]
    assert numbers == sorted(set(numbers)), numbers
    expected = last_bar_states(text, total, key)
    got = {e["step"]: e[key] for e in steps}
    wrong = {s: (v, expected.get(s)) for s, v in got.items() if expected.get(s) != v}
    assert not wrong, wrong  # step: (written, last drawn)
    missing = [s for s in expected if s not in numbers and s % total]  # a bar ends where the next begins
    assert not missing, (missing, numbers)
