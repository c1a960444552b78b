"""Helpers of the Slurm tests: the CLI against the test cluster, a run's row and events, busy nodes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from slurm_cluster import Cluster

ROOT = Path(__file__).resolve().parents[2]
DIGITS = str(ROOT / "examples" / "digits.toml")


def cli(*args: str, timeout: float = 180,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`trainconsole ARGS` as a user types it (the test's home and cluster in its environment)."""
    env = {**os.environ, "TRAINCONSOLE_SLURM_POLL_S": "1", **(env or {})}
    return subprocess.run([sys.executable, "-m", "trainconsole.console", *args], capture_output=True,
                          text=True, timeout=timeout, env=env)


def launch(*args: str) -> str:
    """Submit a run; its id."""
    done = cli("run", *args)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def row(run_id: str) -> dict[str, Any]:
    """The run's `ls --json` row."""
    done = cli("ls", "--json")
    assert done.returncode == 0, done.stderr
    return next(r for r in json.loads(done.stdout) if r["id"] == run_id)


def events(home: Path, run_id: str) -> list[dict[str, Any]]:
    """The run's events, as logged."""
    path = home / "runs" / run_id / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def fill_nodes(cluster: Cluster) -> list[str]:
    """Two jobs that hold both nodes (their one CPU each) until cancelled; their ids."""
    ids = []
    for _ in range(2):
        done = cluster.run("sbatch", "--parsable", "-N1", "-o", "/dev/null", "--wrap", "sleep 600")
        assert done.returncode == 0, done.stderr
        ids.append(done.stdout.strip())
    return ids


def in_squeue(cluster: Cluster, job_id: str) -> bool:
    """Whether squeue shows the job pending or running."""
    return job_id in cluster.jobs()


def watch(home: Path, run_id: str, done: Callable[[str], bool], timeout: float,
          what: str = "the run's status") -> list[str]:
    """The run's status as `ls` derives it (`run_status`, here in the test's process, with Slurm asked at
    most every 0.3 s), polled every 0.1 s until `done(status)`; every status seen, in order (repeats
    folded). An AssertionError naming `what` and the statuses seen if it never comes."""
    from trainconsole.protocol import RunDir, run_status

    old = os.environ.get("TRAINCONSOLE_SLURM_POLL_S")
    os.environ["TRAINCONSOLE_SLURM_POLL_S"] = "0.3"
    seen: list[str] = []
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = run_status(RunDir(home / "runs" / run_id))
            if not seen or seen[-1] != status:
                seen.append(status)
            if done(status):
                return seen
            time.sleep(0.1)
    finally:
        if old is None:
            os.environ.pop("TRAINCONSOLE_SLURM_POLL_S", None)
        else:
            os.environ["TRAINCONSOLE_SLURM_POLL_S"] = old
    raise AssertionError(f"timed out waiting for {what}; seen {seen}")


def start_now(cluster: Cluster, job_id: str, *more: str) -> bool:
    """Start a requeued job now, not after Slurm's two minutes of BeginTime (the tests' only shortcut; a
    job still ending its last run gets its BeginTime only once it has, so this is asked again and again);
    `more`: other `scontrol update` fields. False, so that it can stand in a polled condition."""
    if cluster.run("squeue", "-h", "-j", job_id, "-o", "%r").stdout.strip() == "BeginTime":
        cluster.run("scontrol", "update", f"JobId={job_id}", "StartTime=now", *more)
    return False
