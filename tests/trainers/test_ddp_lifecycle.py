"""A DDP run's life as the console drives it: a rank that fails, a stop, a kill, two nodes on loopback.

Runs are launched like the console launches them (`trainconsole.control.runs`: detached, own process
group),
so "no process left behind" means: nothing alive in the run's process group afterwards.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import psutil
import pytest
from processes import wait_for
from trainer_runs import ON_CPU, REPO, events, make_config, make_run, start

from trainconsole import protocol
from trainconsole.control import runs
from trainconsole.protocol import RunDir
from trainconsole.protocol import home as home_dir
from trainconsole.trainers import checkpoint
from trainconsole.trainers.strategies.rendezvous import free_port

DDP2 = {"name": "ddp", "devices": 2, **ON_CPU}
pytestmark = pytest.mark.slow


def alive_in_group(pgid: int) -> list[int]:
    """Pids of live (non-zombie) processes in a process group."""
    found = []
    for proc in psutil.process_iter(["status"]):
        try:
            if os.getpgid(proc.pid) == pgid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                found.append(proc.pid)
        except (OSError, psutil.Error):
            continue
    return found


def launch(config: dict) -> RunDir:
    """Start a run the way `trainconsole run` does."""
    return runs.launch(config, root=home_dir())


def stepped(run: RunDir, step: int = 1) -> bool:
    """Whether the run has logged a `step` event at or past `step`."""
    return any(e["step"] >= step for e in events(run, "step"))


def test_a_failing_rank_fails_the_run_fast_and_leaves_nothing(home: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAINCONSOLE_FAIL_RANK", "1")
    monkeypatch.setenv("TRAINCONSOLE_FAIL_AT_STEP", "3")
    run = launch(make_config(strategy=DDP2, train={"epochs": 100}))
    assert runs.wait(run) == "failed"
    ended = time.time()
    injected = error_reported_at(run)
    assert ended - injected < 10  # from the exception in rank 1 to the run's end
    failed = events(run, "failed")
    assert len(failed) == 1 and failed[0]["rank"] == 1
    assert failed[0]["cause"].startswith("rank 1: RuntimeError: injected failure")
    assert "reduce_stop" in failed[0]["traceback"]  # rank 1's own traceback, not the launcher's
    assert protocol.run_status(run) == "failed" and run.read_info()["exit_code"] == 1
    wait_for(lambda: not alive_in_group(run.read_info()["pgid"]), timeout=3, what="no process left")


def error_reported_at(run: RunDir) -> float:
    """When rank 1 reported its exception (the `t` of its error report)."""
    return json.loads((run.path / "ranks" / "1.error").read_text())["t"]


def test_stop_agrees_on_a_step_checkpoints_and_exits(home: Path) -> None:
    run = launch(make_config(strategy=DDP2, train={"epochs": 1000, "batch_size": 16}))
    wait_for(lambda: stepped(run, 100), what="100 steps")
    asked = time.monotonic()
    assert runs.stop(run, grace=30) == "stopped"
    assert time.monotonic() - asked < 10
    logged = events(run)
    assert logged[-1]["type"] == "stopped" and logged[-2]["type"] == "checkpoint"
    state = checkpoint.load(run.last_ckpt)
    assert state["step"] == logged[-1]["step"] == logged[-2]["step"] > 100
    assert protocol.run_status(run) == "stopped" and run.read_info()["exit_code"] == 0
    wait_for(lambda: not alive_in_group(run.read_info()["pgid"]), timeout=3, what="no process left")


def test_kill_removes_launcher_ranks_and_loader_workers(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO / "tests" / "trainers")  # the run resolves the data plug-in from its cwd
    data = {"name": "strategy_probes:lazy_digits", "num_workers": 2}  # one DataLoader worker per rank
    run = launch(make_config(strategy=DDP2, data=data, train={"epochs": 1000}))
    wait_for(lambda: stepped(run), what="a step")
    leader = psutil.Process(run.read_info()["pid"])
    family = [leader, *leader.children(recursive=True)]
    assert len(family) >= 5  # launcher, 2 ranks, 2 DataLoader workers (+ multiprocessing's tracker)
    asked = time.monotonic()
    assert runs.kill(run) == []
    assert time.monotonic() - asked < 3
    assert not [p.pid for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not alive_in_group(run.read_info()["pgid"]) and runs.status(run) == "killed"


def test_two_nodes_on_loopback_train_together(home: Path) -> None:
    port = free_port("127.0.0.1")
    nodes = []
    for node in (0, 1):
        spec = {"name": "ddp", "devices": 1, "nnodes": 2, "node_rank": node, "master_port": port, **ON_CPU}
        run = make_run(home_dir(), make_config(strategy=spec, train={"epochs": 3}), name=f"node{node}")
        nodes.append((run, start(run)))
    assert [proc.wait(timeout=120) for _, proc in nodes] == [0, 0], nodes[0][0].stderr.read_text()
    (node0, _), (node1, _) = nodes
    for node, run in enumerate((node0, node1)):
        started, finished = events(run, "started")[0], events(run, "finished")[0]
        assert started["world_size"] == 2 and started["node_rank"] == node and started["nnodes"] == 2
        assert started["steps_per_epoch"] == 23 and finished["steps"] == 3 * 23
    assert events(node0, "eval") and not events(node1, "eval")  # only global rank 0 reports metrics
    assert events(node0, "finished")[0]["best_val_acc"] >= 0.85
