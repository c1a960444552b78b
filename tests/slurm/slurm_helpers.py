"""Helpers of the Slurm tests: the CLI against the test cluster, a run's row and events, busy nodes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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
