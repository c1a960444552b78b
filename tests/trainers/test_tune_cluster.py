"""A search on a real two-node Ray cluster, both nodes on this machine: a head with no CPUs (so no trial can
run there) and a second node with two, each started by `ray start` as on two machines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from processes import wait_for
from ray_nodes import BIN, nodes, ray_nodes

from trainconsole.console.core.run_state import RunState

pytestmark = pytest.mark.slow

STORAGE_CHECK = """
import json, sys, ray
from trainconsole.trainers.strategies import ray_cluster as cluster
ray.init(address=sys.argv[1], log_to_driver=False, runtime_env=cluster.runtime_env())
marker, token = sys.argv[2], sys.argv[3]
print(json.dumps({"right": cluster.nodes_not_seeing(marker, token, 60),
                  "wrong": cluster.nodes_not_seeing(marker, "not-" + token, 60)}))
"""


@pytest.fixture
def ray_cluster() -> Iterator[dict[str, Any]]:
    """`ray start --head` (0 CPUs) and `ray start --address` (2 CPUs), each in its own process group."""
    with ray_nodes(["--num-cpus=0"], ["--num-cpus=2"]) as found:
        cpus = {node: res.get("CPU", 0) for node, res in nodes(found["address"], found["env"]).items()}
        yield {**found, "second": next(i for i, n in cpus.items() if n)}


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "trainconsole"), *args], capture_output=True, text=True, timeout=300,
                          env=env)


def events_of(home: Path, run_id: str) -> list[dict[str, Any]]:
    path = home / "runs" / run_id / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def trial_workers(since: float) -> list[psutil.Process]:
    """Live Ray workers running a trial (`ray::ImplicitFunc...`), started since `since`, on any node."""
    found = []
    for proc in psutil.process_iter(["create_time", "status", "cmdline"]):
        command = " ".join(proc.info["cmdline"] or [])
        if proc.info["create_time"] >= since and proc.info["status"] != psutil.STATUS_ZOMBIE \
                and "ImplicitFunc" in command:
            found.append(proc)
    return found


def test_trials_run_on_the_second_node_report_here_and_a_kill_leaves_nothing(
        ray_cluster: dict[str, Any], home: Path, tmp_path: Path) -> None:
    env, address = {**ray_cluster["env"], "TRAINCONSOLE_HOME": str(home)}, ray_cluster["address"]
    out = cli("tune", "examples/tune_digits_random_asha.toml", "--set", "tune.num_samples=2", "--set",
              "tune.max_t=2", "--ray-address", address, "--wait", env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    run_id = out.stdout.split()[0]
    events = events_of(home, run_id)
    trial_events = [e for e in events if e["type"] == "trial"]
    assert {e["trial_id"] for e in trial_events} and events[-1]["type"] == "finished"
    results = [e for e in trial_events if e["iteration"]]
    second = ray_cluster["second"][:8]
    assert results and all(second in e["node"] for e in results), {e.get("node") for e in results}
    state = RunState(run_id)  # what the console's leaderboard is made of
    for event in events:
        state.apply(event)
    shown = state.search.trials.values()
    assert len(shown) == 2 and all(t.metrics.get("val_acc") for t in shown)

    # every node sees the run directory (the same disk here); a token no node holds is seen by none
    marker = home / "runs" / run_id / "marker"
    marker.write_text("token")
    check = subprocess.run([sys.executable, "-c", STORAGE_CHECK, address, str(marker), "token"], env=env,
                           capture_output=True, text=True, timeout=300)
    answer = json.loads(check.stdout.strip().splitlines()[-1])
    assert answer["right"] == [] and len(answer["wrong"]) == 2, check.stderr[-2000:]

    since = time.time()
    out = cli("tune", "examples/tune_digits_random_asha.toml", "--set", "tune.num_samples=2", "--set",
              "tune.max_t=1000", "--set", 'tune.scheduler="none"', "--ray-address", address, env=env)
    run_id = out.stdout.split()[0]
    try:
        killed_cleanly(home, run_id, env, since)
    finally:
        cli("kill", run_id, env=env)  # whatever happened above, no search outlives the test


def alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def killed_cleanly(home: Path, run_id: str, env: dict[str, str], since: float) -> None:
    wait_for(lambda: len({e["pid"] for e in events_of(home, run_id) if e.get("pid")}) == 2, timeout=180,
             what="both trials training")
    workers = [psutil.Process(e["pid"]) for e in events_of(home, run_id) if e.get("pid")]
    driver = json.loads((home / "runs" / run_id / "run.json").read_text())["pid"]
    assert all(driver not in {p.pid for p in w.parents()} for w in workers)  # the cluster's processes
    assert cli("kill", run_id, env=env).returncode == 0
    wait_for(lambda: not trial_workers(since), timeout=60, what="no trial worker left on either node")
    # Ray ends a dead driver's workers on its own time (seconds later on a busy machine): wait for it
    wait_for(lambda: not any(alive(w) for w in workers), timeout=60, what="the trials' workers ended")
    rows = {row["id"]: row for row in json.loads(cli("ls", "--json", env=env).stdout)}
    assert rows[run_id]["status"] == "killed"


def test_a_ray_client_address_is_refused_before_ray_starts(home: Path) -> None:
    out = cli("tune", "examples/tune_digits_random_asha.toml", "--ray-address", "ray://127.0.0.1:10001",
              env={**os.environ, "TRAINCONSOLE_HOME": str(home)})
    lines = out.stderr.splitlines()
    assert out.returncode == 2 and len(lines) == 1, out.stderr  # one line, and nothing else
    assert "tune.ray_address" in lines[0] and "ray://" in lines[0], out.stderr
    runs = home / "runs"
    assert not runs.exists() or not any(runs.iterdir()), "a refused search created a run"
