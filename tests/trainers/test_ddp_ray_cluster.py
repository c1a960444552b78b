"""A ddp run whose ranks Ray places on a real two-node cluster, both nodes on this machine, each started by
`ray start` as on its own machine and given one CPU, so the two gloo ranks (one CPU each) must go one
per node. One cluster serves every case; the undisturbed runs are made once and compared against."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from processes import gone, wait_for
from ray_nodes import BIN, nodes, ray_nodes

from trainconsole.console.core.run_state import RunState

pytestmark = pytest.mark.slow

EPOCHS = 12  # long enough (~0.25-0.5 s an epoch here) for a kill or a lost rank to land mid-run
DDP = ["examples/digits.toml", "--set", 'strategy.name="ddp"', "--set", "strategy.devices=2",
       "--set", f"train.epochs={EPOCHS}"]

RAY_STATE = """
import json, sys, ray
ray.init(address=sys.argv[1], log_to_driver=False)
cpus = {"free": ray.available_resources().get("CPU", 0), "total": ray.cluster_resources().get("CPU", 0)}
print(json.dumps({**cpus, "groups": [g["state"] for g in ray.util.placement_group_table().values()]}))
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The two nodes (one CPU each), and a home of their own that every case shares."""
    with ray_nodes(["--num-cpus=1"], ["--num-cpus=1"]) as found:
        home = tmp_path_factory.mktemp("ray-ddp") / "home"
        yield {**found, "home": home, "env": {**found["env"], "TRAINCONSOLE_HOME": str(home)},
               "nodes": nodes(found["address"], found["env"])}


@pytest.fixture(scope="module")
def undisturbed(cluster: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The same 2-rank run on this machine's own processes, and on the cluster: each one's events."""
    local = run_events(cluster, *DDP)
    on_ray = run_events(cluster, *DDP, "--set", "strategy.nnodes=2", "--ray-address", cluster["address"])
    return {"local": local, "ray": on_ray}


def cli(*args: str, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "trainconsole"), *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


def run_events(cluster: dict[str, Any], *args: str) -> list[dict[str, Any]]:
    out = cli("run", *args, "--wait", env=cluster["env"])
    assert out.returncode == 0, out.stdout + out.stderr[-3000:]
    return events_of(cluster["home"], out.stdout.split()[0])


def events_of(home: Path, run_id: str) -> list[dict[str, Any]]:
    path = home / "runs" / run_id / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def wait_ended(home: Path, run_id: str) -> None:
    wait_for(lambda: [e for e in events_of(home, run_id) if e["type"] in ("finished", "failed")],
             timeout=300, what=f"the end of {run_id}")


def kinds(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


def ray_state(cluster: dict[str, Any]) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-c", RAY_STATE, cluster["address"]], env=cluster["env"],
                         capture_output=True, text=True, timeout=120)
    return json.loads(out.stdout.strip().splitlines()[-1])


def released(cluster: dict[str, Any]) -> bool:
    """Ray holds nothing for the run: every CPU free, no placement group left but removed ones."""
    state = ray_state(cluster)
    return state["free"] == state["total"] == 2 and all(g == "REMOVED" for g in state["groups"])


def test_one_rank_per_node_trains_as_a_local_two_rank_run(cluster: dict[str, Any],
                                                           undisturbed: dict[str, Any]) -> None:
    local, on_ray = undisturbed["local"], undisturbed["ray"]
    started = kinds(on_ray, "started")[0]
    assert started["world_size"] == 2 and started["backend"] == "gloo"
    assert len(started["nodes"]) == 2 and sorted(started["rank_nodes"]) == [0, 1], started
    # the nodes named are the cluster's two nodes (ids as Ray gives them)
    ids = {label.split("(")[1].rstrip(")") for label in started["nodes"]}
    assert ids == {node_id[:8] for node_id in cluster["nodes"]}
    # Same seed, same shards, same gloo all-reduce of two ranks (a + b is exact whatever the order), one
    # thread a rank both times: the very same numbers, not merely close ones.
    assert [e["val_acc"] for e in kinds(on_ray, "eval")] == [e["val_acc"] for e in kinds(local, "eval")]
    assert [e["val_loss"] for e in kinds(on_ray, "eval")] == [e["val_loss"] for e in kinds(local, "eval")]
    assert kinds(on_ray, "finished")[0]["steps"] == kinds(local, "finished")[0]["steps"]
    assert len(kinds(on_ray, "finished")) == 1  # one run log: only rank 0 wrote its final event


def test_kill_ends_every_rank_on_every_node(cluster: dict[str, Any]) -> None:
    env, home = cluster["env"], cluster["home"]
    out = cli("run", *DDP, "--set", "train.epochs=100000", "--ray-address", cluster["address"], env=env)
    run_id = out.stdout.split()[0]
    try:
        wait_for(lambda: kinds(events_of(home, run_id), "step"), timeout=240, what="the ranks training")
        ranks = kinds(events_of(home, run_id), "started")[0]["rank_pids"]
        assert not gone(ranks)
        driver = json.loads((home / "runs" / run_id / "run.json").read_text())["pid"]
        assert all(driver not in {p.pid for p in psutil.Process(r).parents()} for r in ranks)  # Ray's workers
        assert cli("kill", run_id, env=env).returncode == 0
        # Ray ends a dead driver's actors on its own time (seconds on a busy machine): wait for it
        wait_for(lambda: gone(ranks), timeout=60, what="both ranks ended")
        wait_for(lambda: released(cluster), timeout=60, what="Ray's resources and placement group freed")
        rows = {row["id"]: row for row in json.loads(cli("ls", "--json", env=env).stdout)}
        assert rows[run_id]["status"] == "killed"
    finally:
        cli("kill", run_id, env=env)


def test_a_lost_rank_restarts_from_the_last_checkpoint_and_ends_as_undisturbed(
        cluster: dict[str, Any], undisturbed: dict[str, Any]) -> None:
    env, home = cluster["env"], cluster["home"]
    out = cli("run", *DDP, "--set", "strategy.max_failures=1", "--ray-address", cluster["address"], env=env)
    run_id = out.stdout.split()[0]
    try:
        wait_for(lambda: [e for e in kinds(events_of(home, run_id), "checkpoint") if e["epoch"] >= 2],
                 timeout=240, what="a checkpoint of epoch 2")
        started = kinds(events_of(home, run_id), "started")[0]
        second = started["rank_nodes"].index(1 - started["rank_nodes"][0])  # the rank away from rank 0
        os.kill(started["rank_pids"][second], signal.SIGKILL)
        wait_ended(home, run_id)
    finally:
        cli("kill", run_id, env=env)
    events = events_of(home, run_id)
    assert events[-1]["type"] == "finished", events[-1]
    (warning,) = kinds(events, "warning")
    lost_node = started["nodes"][started["rank_nodes"][second]]
    assert warning["code"] == "node_lost" and warning["node"] == lost_node, warning
    assert warning["resumed_from_step"] >= 2 * started["steps_per_epoch"], warning
    again = kinds(events, "started")[1]
    assert again["resumed_from_step"] == warning["resumed_from_step"] and again["restarts"] == 1
    assert events[-1]["steps"] == kinds(undisturbed["ray"], "finished")[0]["steps"]
    # two ranks again, from a checkpoint with the model's and the optimizer's state, and each epoch's order
    # drawn from the seed and the epoch alone: the very accuracy of the run no rank was lost in
    assert events[-1]["val_acc"] == kinds(undisturbed["ray"], "finished")[0]["val_acc"]
    state = RunState(run_id)  # the console's view: one curve, continued from the step resumed at
    for event in events:
        state.apply(event)
    xs = list(state.train_loss.xs)
    assert xs == sorted(set(xs)) and xs[-1] == events[-1]["steps"]
    assert state.status == "finished"
    wait_for(lambda: released(cluster), timeout=60, what="Ray's resources freed")



def test_stop_and_resume_on_the_cluster_end_as_undisturbed(cluster: dict[str, Any],
                                                           undisturbed: dict[str, Any]) -> None:
    env, home = cluster["env"], cluster["home"]
    out = cli("run", *DDP, "--set", "strategy.nnodes=2", "--ray-address", cluster["address"], env=env)
    run_id = out.stdout.split()[0]
    try:
        wait_for(lambda: kinds(events_of(home, run_id), "checkpoint"), timeout=240, what="a first checkpoint")
        assert cli("stop", run_id, env=env).returncode == 0
        rows = {row["id"]: row for row in json.loads(cli("ls", "--json", env=env).stdout)}
        assert rows[run_id]["status"] == "stopped" and kinds(events_of(home, run_id), "stopped")
        wait_for(lambda: released(cluster), timeout=60, what="Ray's resources freed after the stop")
        assert cli("resume", run_id, env=env).returncode == 0
        wait_ended(home, run_id)
    finally:
        cli("kill", run_id, env=env)
    events = events_of(home, run_id)
    assert events[-1]["type"] == "finished", events[-1]
    stopped_at = kinds(events, "stopped")[0]["step"]
    assert kinds(events, "started")[1]["resumed_from_step"] == stopped_at > 0
    assert events[-1]["steps"] == kinds(undisturbed["ray"], "finished")[0]["steps"]
    assert events[-1]["val_acc"] == kinds(undisturbed["ray"], "finished")[0]["val_acc"]  # as after a loss


def test_a_failing_rank_without_restarts_fails_the_run_naming_its_node(cluster: dict[str, Any]) -> None:
    env = {**cluster["env"], "TRAINCONSOLE_FAIL_RANK": "1", "TRAINCONSOLE_FAIL_AT_STEP": "5"}
    out = cli("run", *DDP, "--ray-address", cluster["address"], "--wait", env=env)
    assert out.returncode == 1, out.stderr[-2000:]
    events = events_of(cluster["home"], out.stdout.split()[0])
    started, failed = kinds(events, "started")[0], events[-1]
    assert failed["type"] == "failed" and failed["rank"] == 1, failed
    assert failed["node"] == started["nodes"][started["rank_nodes"][1]] and failed["node"] in failed["cause"]
    assert "injected failure in rank 1" in failed["cause"] and not kinds(events, "warning")
    wait_for(lambda: released(cluster), timeout=60, what="Ray's resources freed")


def test_a_lost_node_is_survived_on_the_node_left(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The node of a rank goes (its raylet and workers killed): with `min_workers = 1` the run goes on from
    its last checkpoint with one rank on the node left, and ends with an undisturbed run's steps. A longer
    run than the others: a node's workers outlive its raylet for a moment, and on a quiet machine 12
    epochs (~0.25 s each) ended before they went."""
    epochs = 60
    # Ray's GCS finds the node dead after 3 missed health checks a second apart (its default, 5 checks 3 s
    # apart, kept the run waiting 20 s between node_lost and its restart here; 5.5 s with these)
    monkeypatch.setenv("RAY_health_check_period_ms", "1000")
    monkeypatch.setenv("RAY_health_check_failure_threshold", "3")
    with ray_nodes(["--num-cpus=1"], ["--num-cpus=1"]) as found:
        home, env = tmp_path / "home", {**found["env"], "TRAINCONSOLE_HOME": str(tmp_path / "home")}
        out = cli("run", *DDP, "--set", f"train.epochs={epochs}", "--set", "strategy.max_failures=1",
                  "--set", "strategy.min_workers=1", "--ray-address", found["address"], env=env)
        run_id = out.stdout.split()[0]
        try:
            wait_for(lambda: [e for e in kinds(events_of(home, run_id), "checkpoint") if e["epoch"] >= 2],
                     timeout=240, what="a checkpoint of epoch 2")
            os.killpg(found["groups"][1], signal.SIGKILL)  # the second node: its raylet and its workers
            wait_ended(home, run_id)
        finally:
            cli("kill", run_id, env=env)
        left = next(iter(nodes(found["address"], found["env"])))[:8]  # the node left: the head
    events = events_of(home, run_id)
    assert events[-1]["type"] == "finished", events[-1]
    first, again = kinds(events, "started")
    (warning,) = kinds(events, "warning")
    assert warning["code"] == "node_lost" and warning["node"] in first["nodes"]
    assert left not in warning["node"]
    assert again["world_size"] == 1 and again["nodes"] == [n for n in first["nodes"] if left in n]
    assert again["resumed_from_step"] == warning["resumed_from_step"] >= 2 * first["steps_per_epoch"]
    assert events[-1]["steps"] == epochs * first["steps_per_epoch"]
