"""A run with a time limit shorter than its training, and `slurm.requeue`: signalled before the limit, it
checkpoints, its job is requeued, and it comes back as the same run from last.pt, with one history."""

from __future__ import annotations

from pathlib import Path

import pytest
from processes import wait_for
from slurm_cluster import Cluster
from slurm_helpers import DIGITS, cli, events, launch, row

pytestmark = pytest.mark.slow


def test_a_run_past_its_time_limit_comes_back_as_the_same_run(cluster: Cluster, home: Path) -> None:
    # a 1-minute limit, the signal 50 s before it (Slurm may send it up to a minute early: at once)
    run_id = launch(DIGITS, "--time", "1", "--set", "slurm.requeue=true", "--set", "slurm.signal_s=50",
                    "--set", "train.epochs=6")
    wait_for(lambda: _requeued_at_once(cluster) or row(run_id)["status"] in ("finished", "failed", "killed"),
             480, "the run to end")
    found = row(run_id)
    assert found["status"] == "finished", cli("logs", run_id).stdout[-3000:]
    log = events(home, run_id)
    kinds = [e["type"] for e in log]
    assert kinds.count("stopped") >= 1 and kinds.count("started") >= 2 and kinds.count("finished") == 1
    evals = [e["epoch"] for e in log if e["type"] == "eval"]
    assert evals[-1] == 6 and evals == sorted(evals)  # one history: it went on, never started over
    assert evals.count(1) == 1
    assert found["slurm"]["job_id"] == next(e["slurm_job"] for e in log if e["type"] == "queued")


def _requeued_at_once(cluster: Cluster) -> bool:
    """Start a requeued job now, not after Slurm's two minutes of BeginTime (the test's only shortcut)."""
    for line in cluster.run("squeue", "-h", "-o", "%i %r").stdout.splitlines():
        job_id, reason = line.split(maxsplit=1)
        if reason == "BeginTime":
            cluster.run("scontrol", "update", f"JobId={job_id}", "StartTime=now")
    return False
