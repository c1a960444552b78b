"""ddp across the two nodes of an allocation: one task per node, the rendezvous on the first, and the same
training as two ranks on one node."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from processes import wait_for
from slurm_cluster import Cluster
from slurm_helpers import DIGITS, cli, events, launch, row

pytestmark = pytest.mark.slow

DDP = ["--set", 'strategy.name="ddp"', "--set", "strategy.devices=1", "--set", "train.epochs=2",
       "--set", "train.seed=3", "--set", "strategy.oversubscribe=true"]


def node_events(path: Path) -> list[dict[str, Any]]:
    """The events of a node's own directory."""
    return [json.loads(line) for line in (path / "events.jsonl").read_text().splitlines() if line.strip()]


def losses(home: Path, run_id: str) -> list[tuple[int, float]]:
    """The run's validation loss after each epoch."""
    log = events(home, run_id)
    return [(e["epoch"], round(e["val_loss"], 4)) for e in log if e["type"] == "eval"]


def test_ddp_on_two_nodes_trains_as_two_ranks_on_one(cluster: Cluster, home: Path) -> None:
    two_nodes = launch(DIGITS, *DDP, "--nodes", "2")
    wait_for(lambda: row(two_nodes)["status"] not in ("running", "queued"), 300, "the 2-node run to end")
    found = row(two_nodes)
    assert found["status"] == "finished", cli("logs", two_nodes).stdout[-3000:]
    assert found["slurm"]["nodes"] == "n[1-2]"
    started = next(e for e in events(home, two_nodes) if e["type"] == "started")
    assert started["world_size"] == 2 and started["nnodes"] == 2
    other = node_events(home / "runs" / two_nodes / "nodes" / "1")  # the second node's own log
    assert [e["type"] for e in other if e["type"] in ("started", "finished")] == ["started", "finished"]

    one_node = cli("run", DIGITS, *DDP, "--set", "strategy.devices=2", "--wait")
    assert one_node.returncode == 0, one_node.stderr
    mine, theirs = losses(home, two_nodes), losses(home, one_node.stdout.strip())
    assert len(mine) == 2 and mine == pytest.approx(theirs, abs=1e-3)


def test_stop_of_a_two_node_run_checkpoints_and_ends_both_nodes(cluster: Cluster, home: Path) -> None:
    run_id = launch(DIGITS, *DDP, "--set", "train.epochs=500", "--nodes", "2")
    run = home / "runs" / run_id
    wait_for(lambda: (run / "checkpoints" / "last.pt").exists(), 240, "a first checkpoint")
    job_id = row(run_id)["slurm"]["job_id"]
    assert cli("stop", run_id, timeout=240).returncode == 0  # TERM to each node's task
    assert row(run_id)["status"] == "stopped"
    assert node_events(run / "nodes" / "1")[-1]["type"] == "stopped"  # the second node stopped with it
    wait_for(lambda: job_id not in cluster.jobs(), 60, "the job to leave squeue")
