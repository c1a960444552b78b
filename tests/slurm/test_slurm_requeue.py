"""A run with a time limit shorter than its training, and `slurm.requeue`: signalled before the limit, it
checkpoints, its job is requeued, and it comes back as the same run from last.pt, with one history."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from processes import wait_for
from slurm_cluster import Cluster
from slurm_helpers import DIGITS, cli, events, launch, row

pytestmark = pytest.mark.slow


def test_a_run_past_its_time_limit_comes_back_as_the_same_run(cluster: Cluster, home: Path) -> None:
    run_id = launch(DIGITS, "--time", "10", "--set", "slurm.requeue=true", "--set", "slurm.signal_s=50",
                    "--set", "train.epochs=8")
    script = (home / "runs" / run_id / "slurm.sh").read_text()
    assert "#SBATCH --signal=B:USR1@50" in script and "#SBATCH --requeue" in script
    last = home / "runs" / run_id / "checkpoints" / "last.pt"
    wait_for(lambda: last.exists(), 180, "a first checkpoint")
    job_id = row(run_id)["slurm"]["job_id"]
    # what Slurm sends 50 s before the time limit (--signal=B:USR1@50), sent now rather than in 9 minutes
    assert cluster.run("scancel", "--signal=USR1", "--batch", job_id).returncode == 0
    wait_for(lambda: _requeued_at_once(cluster) or row(run_id)["status"] in ("finished", "failed", "killed"),
             400, "the run to end")
    found = row(run_id)
    assert found["status"] == "finished", cli("logs", run_id).stdout[-3000:]
    log = events(home, run_id)
    kinds = [e["type"] for e in log]
    assert kinds.count("stopped") == 1 and kinds.count("started") == 2 and kinds.count("finished") == 1
    evals = [e["epoch"] for e in log if e["type"] == "eval"]
    assert evals[-1] == 8 and evals == sorted(evals)  # one history: it went on, never started over
    assert evals.count(1) == 1
    assert found["slurm"]["job_id"] == job_id and json.loads(
        (home / "runs" / run_id / "run.json").read_text())["slurm"]["restarts"] == 1


def _requeued_at_once(cluster: Cluster) -> bool:
    """Start a requeued job now, not after Slurm's two minutes of BeginTime (the test's only shortcut)."""
    for line in cluster.run("squeue", "-h", "-o", "%i %r").stdout.splitlines():
        job_id, reason = line.split(maxsplit=1)
        if reason == "BeginTime":
            cluster.run("scontrol", "update", f"JobId={job_id}", "StartTime=now")
    return False
