"""A run with a time limit shorter than its training, and `slurm.requeue`: Slurm's own time-limit signal
(`--signal=B:USR1@N`) makes it checkpoint, its job is requeued, it waits `queued: requeued (BeginTime)`
(never `stopped`), and it comes back as the same run from last.pt, with one history."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from slurm_cluster import Cluster
from slurm_helpers import DIGITS, cli, events, launch, row, start_now, watch

pytestmark = pytest.mark.slow


def test_a_run_past_its_time_limit_waits_requeued_and_comes_back_as_the_same_run(cluster: Cluster,
                                                                                  home: Path) -> None:
    run_id = launch(DIGITS, "--time", "1", "--set", "slurm.requeue=true", "--set", "slurm.signal_s=30",
                    "--set", "train.epochs=500")
    script = (home / "runs" / run_id / "slurm.sh").read_text()
    assert "#SBATCH --signal=B:USR1@30" in script and "#SBATCH --requeue" in script
    # Slurm signals the batch step 30 s before its one-minute limit (when it next checks the limits)
    seen = watch(home, run_id, lambda status: status == "queued" and started(home, run_id) == 1, 180,
                 "the run requeued by its time limit")
    waiting = row(run_id)
    assert waiting["status"] == "queued" and waiting["slurm"]["reason"] == "requeued (BeginTime)", waiting
    job_id = waiting["slurm"]["job_id"]
    stopped_at = max((e["epoch"] for e in events(home, run_id) if e["type"] == "eval"), default=0)
    # (and a longer limit, so that its second run is not requeued in turn before the test has seen it)
    seen += watch(home, run_id, lambda status: start_now(cluster, job_id, "TimeLimit=5") or (
        started(home, run_id) == 2 and any(e["type"] == "eval" and e["epoch"] > stopped_at + 1
                                           for e in events(home, run_id))), 180,
        "an epoch after the checkpoint's, in the job's second run")
    assert "stopped" not in seen and "lost" not in seen and seen[-1] == "running", seen
    log = events(home, run_id)
    again = [e for e in log if e["type"] == "started"][-1]
    assert again["resumed_from_step"] > 0, cli("logs", run_id).stdout[-3000:]  # from last.pt
    evals = [e["epoch"] for e in log if e["type"] == "eval"]
    assert evals == sorted(evals) and evals.count(1) == 1  # one history: it went on, never started over
    assert row(run_id)["slurm"]["job_id"] == job_id
    assert json.loads((home / "runs" / run_id / "run.json").read_text())["slurm"]["restarts"] == 1
    assert cli("kill", run_id).returncode == 0


def started(home: Path, run_id: str) -> int:
    """How many times the run's process has started (its `started` events)."""
    return sum(e["type"] == "started" for e in events(home, run_id))
