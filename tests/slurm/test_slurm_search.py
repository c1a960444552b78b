"""A search on the two nodes (`tune --slurm --nodes 2`): one Ray cluster inside the allocation, its head on
the first node and a worker on the second, trials on both; it ends with the job, finished or killed, and
leaves no Ray process on any node (both nodes are this machine here)."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest
from processes import wait_for
from slurm_cluster import Cluster
from slurm_helpers import ROOT, cli, events, in_squeue, row

pytestmark = pytest.mark.slow


def ray_left(home: Path, run_id: str, job_id: str) -> list[str]:
    """The command lines of this search's processes still alive: its driver, Ray's on either node."""
    needles = (str(home / "runs" / run_id), f"tcray-j{job_id}-")
    out = []
    for p in psutil.process_iter(["cmdline"]):
        line = " ".join(p.info["cmdline"] or [])
        if any(n in line for n in needles):
            out.append(line)
    return out


def trial_nodes(home: Path, run_id: str) -> set[str]:
    """The Ray nodes the search's trials reported from."""
    return {e["node"] for e in events(home, run_id) if e["type"] == "trial" and e.get("node")}


def test_a_search_on_two_nodes_runs_trials_on_both_and_leaves_no_ray(cluster: Cluster, home: Path,
                                                                       tmp_path: Path) -> None:
    done = cli("tune", str(_two_trials(tmp_path)), "--slurm", "--nodes", "2", "--wait", timeout=400)
    assert done.returncode == 0, done.stderr
    run_id = done.stdout.strip()
    found = row(run_id)
    assert found["status"] == "finished" and found["last"]["trials"] == 2, found
    assert found["slurm"]["nodes"] == "n[1-2]"
    assert len(trial_nodes(home, run_id)) == 2  # one trial on each node's Ray
    job_id = found["slurm"]["job_id"]
    wait_for(lambda: not in_squeue(cluster, job_id), 60, "the job to end with its search")
    wait_for(lambda: not ray_left(home, run_id, job_id), 60, "Ray to end with the job on every node")


def test_a_killed_search_on_two_nodes_leaves_no_ray(cluster: Cluster, home: Path, tmp_path: Path) -> None:
    run_id = _tune(_two_trials(tmp_path, epochs=50))
    wait_for(lambda: len(trial_nodes(home, run_id)) == 2, 240, "a trial running on each node")
    job_id = row(run_id)["slurm"]["job_id"]
    running = " ".join(ray_left(home, run_id, job_id))
    assert all(f"tcray-j{job_id}-{rank}/" in running for rank in (0, 1))  # each node's Ray, seen here
    assert cli("kill", run_id).returncode == 0
    assert row(run_id)["status"] == "killed"
    assert not in_squeue(cluster, job_id)
    wait_for(lambda: not ray_left(home, run_id, job_id), 60, "no Ray process left on any node")


def test_a_stopped_search_on_two_nodes_ends_stopped_and_leaves_no_ray(cluster: Cluster, home: Path,
                                                                       tmp_path: Path) -> None:
    run_id = _tune(_two_trials(tmp_path, epochs=50))
    wait_for(lambda: len(trial_nodes(home, run_id)) == 2, 240, "a trial running on each node")
    job_id = row(run_id)["slurm"]["job_id"]
    assert cli("stop", run_id, timeout=240).returncode == 0  # the driver's own stop: trials checkpoint
    assert row(run_id)["status"] == "stopped"
    wait_for(lambda: not in_squeue(cluster, job_id), 60, "the job to end with its search")
    wait_for(lambda: not ray_left(home, run_id, job_id), 60, "no Ray process left on any node")


def _tune(config: Path) -> str:
    done = cli("tune", str(config), "--slurm", "--nodes", "2")
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _two_trials(tmp_path: Path, epochs: int = 1) -> Path:
    """The grid example cut to two trials of `epochs` epochs (a small search on a busy machine)."""
    text = (ROOT / "examples" / "tune_digits_grid.toml").read_text()
    text = text.replace("max_t = 6", f"max_t = {epochs}\ngrace_period = {epochs}")
    text = text.replace("[0.01, 0.05, 0.2]", "[0.05]")  # (max_t is a trial's epochs)
    path = tmp_path / "tune_two.toml"
    path.write_text(text)
    return path
