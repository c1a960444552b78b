"""A script run and a search, each submitted with --slurm: the script runner and the search's driver run
on the allocation (the search's Ray inside it), end there, and leave no Ray process behind."""

from __future__ import annotations

import json
from pathlib import Path

import psutil
import pytest
from processes import wait_for
from slurm_cluster import Cluster
from slurm_helpers import ROOT, cli, events, in_squeue, row

pytestmark = pytest.mark.slow

SCRIPT = "import time\nfor i in range(5):\n    print(f'step {i} loss={1.0 / (i + 1):.3f}', flush=True)\n"


def test_a_script_and_a_search_run_as_slurm_jobs(cluster: Cluster, home: Path, tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    done = cli("run", "--script", str(script), "--slurm", "--wait")
    assert done.returncode == 0, done.stderr
    found = row(done.stdout.strip())
    assert found["kind"] == "script" and found["status"] == "finished" and found["last"]["loss"] == 0.2
    assert found["slurm"]["nodes"] in ("n1", "n2")

    search = cli("tune", str(_two_trials(tmp_path)), "--slurm", "--wait", timeout=280)
    assert search.returncode == 0, search.stderr
    run_id = search.stdout.strip()
    assert row(run_id)["status"] == "finished" and row(run_id)["last"]["trials"] == 2
    info = json.loads((home / "runs" / run_id / "run.json").read_text())
    needles = [n for n in (info.get("ray_temp_dir"), str(home / "runs" / run_id)) if n]  # Ray's, the driver's

    def left() -> list[str]:
        return [" ".join(p.info["cmdline"] or []) for p in psutil.process_iter(["cmdline"])
                if any(n in " ".join(p.info["cmdline"] or []) for n in needles)]

    wait_for(lambda: not left(), 60, "the driver and Ray to exit after the search's last word")
    assert not in_squeue(cluster, row(run_id)["slurm"]["job_id"])


RANKS = """import os
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
total = torch.ones(1)
dist.all_reduce(total)
print(f"rank {dist.get_rank()} of {dist.get_world_size()} sum={total.item():.0f} "
      f"on {os.environ.get('SLURMD_NODENAME')}", flush=True)
dist.destroy_process_group()
"""


def test_a_script_with_nproc_runs_under_torchrun_across_the_two_nodes(cluster: Cluster, home: Path,
                                                                      tmp_path: Path) -> None:
    script = tmp_path / "ranks.py"
    script.write_text(RANKS)
    done = cli("run", "--script", str(script), "--nproc", "1", "--slurm", "--nodes", "2", "--wait")
    assert done.returncode == 0, done.stderr
    run_id = done.stdout.strip()
    assert row(run_id)["status"] == "finished" and row(run_id)["slurm"]["nodes"] == "n[1-2]"
    said = "".join(p.read_text() for p in (home / "runs" / run_id).rglob("*.log"))
    # one rank on each node, one world of two: the all-reduce summed both
    assert "rank 0 of 2 sum=2 on n1" in said and "rank 1 of 2 sum=2 on n2" in said, said
    started = next(e for e in events(home, run_id) if e["type"] == "started")
    assert started["strategy"] == "torchrun" and started["world_size"] == 2


def _two_trials(tmp_path: Path) -> Path:
    """The grid example cut to two one-epoch trials (a small search on a busy machine)."""
    text = (ROOT / "examples" / "tune_digits_grid.toml").read_text()
    text = text.replace("max_t = 6", "max_t = 1\ngrace_period = 1").replace("[0.01, 0.05, 0.2]", "[0.05]")
    path = tmp_path / "tune_two.toml"
    path.write_text(text)
    return path
