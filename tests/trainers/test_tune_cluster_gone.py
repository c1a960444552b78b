"""A search on a real Ray cluster (`ray start --head` on free ports) whose cluster goes away mid-run: the
search ends `failed` in Ray's words within the bound (`cluster_watch.BOUND_S`, at most 60 s), its running
trial `error` with the same cause, and no process of the run is left.

Before: the driver's Ray waited 60 s for the GCS, then ended the process on the spot; the search read
`running` for that minute, then `lost`, with no final event."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from processes import wait_for
from ray_nodes import BIN, ray_nodes

from trainconsole.trainers.tune import cluster_watch

pytestmark = pytest.mark.slow


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "trainconsole"), *args], capture_output=True, text=True, timeout=120,
                          env=env)


def events_of(run: Path) -> list[dict[str, Any]]:
    path = run / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def row(run_id: str, env: dict[str, str]) -> dict[str, Any]:
    return next(r for r in json.loads(cli("ls", "--json", env=env).stdout) if r["id"] == run_id)


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_a_search_whose_cluster_goes_away_fails_in_rays_words_within_the_bound(home: Path) -> None:
    assert cluster_watch.BOUND_S <= 60
    with ray_nodes(["--num-cpus=1"]) as cluster:
        env = {**cluster["env"], "TRAINCONSOLE_HOME": str(home)}
        # one trial at a time, long enough to be training when the cluster goes
        sets = ["tune.num_samples=2", "tune.max_t=500", "tune.scheduler='none'", "tune.max_concurrent=1"]
        out = cli("tune", "--demo", "--ray-address", cluster["address"],
                  *(a for s in sets for a in ("--set", s)), env=env)
        assert out.returncode == 0, out.stderr
        run_id = out.stdout.split()[0]
        run = home / "runs" / run_id
        try:
            wait_for(lambda: any(e.get("iteration") for e in events_of(run)), timeout=180,
                     what="a trial's first result")
            driver = json.loads((run / "run.json").read_text())["pid"]
            workers = {e["pid"] for e in events_of(run) if e.get("pid")}
            family = {driver, *(p.pid for p in psutil.Process(driver).children(recursive=True)), *workers}
            for group in cluster["groups"]:  # this cluster's own processes only (others may run Ray too)
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(group, signal.SIGKILL)
            gone = time.monotonic()
            wait_for(lambda: row(run_id, env)["status"] != "running", timeout=cluster_watch.BOUND_S + 30,
                     what="the search to end")
            took = time.monotonic() - gone
        finally:
            cli("kill", run_id, env=env)  # whatever happened above, no search outlives the test
    shown = row(run_id, env)
    assert shown["status"] == "failed" and took <= cluster_watch.BOUND_S, (shown, took)
    cause = shown["cause"]
    assert cluster["address"] in cause and "went away" in cause and "Ray said: " in cause, cause
    assert "GCS" in cause.partition("Ray said: ")[2], cause  # Ray's own words
    events = events_of(run)
    assert events[-1]["type"] == "failed" and events[-1]["hint"], events[-1]
    last = {e["trial_id"]: e for e in events if e["type"] == "trial"}
    assert {e["status"] for e in last.values()} <= {"error", "terminated"}, last
    assert any(e["status"] == "error" and e["cause"] == cause for e in last.values()), last
    info = json.loads((run / "run.json").read_text())
    assert info["exit_code"] == 1 and info["ended_at"], info  # the end recorded as for any run
    wait_for(lambda: not any(alive(pid) for pid in family), timeout=10, what="no process of the run left")


class RpcError(Exception):
    """Stands for Ray's RpcError: an exception of Ray's own module."""


RpcError.__module__ = "ray.exceptions"


def test_the_watch_says_a_gcs_that_stops_answering_and_never_an_error_that_is_not_rays() -> None:
    def silent() -> None:
        raise RpcError("Timed out while waiting for GCS to become available.")

    given_up: list[str] = []
    watch = cluster_watch.ClusterWatch("10.0.0.1:6379", given_up.append, ask=silent, gone_s=0.2, every_s=0.02,
                                       force_s=0.2).start()
    wait_for(lambda: given_up, timeout=10, what="the watch to give up")
    assert watch.cause == given_up[0] and cluster_watch.gone()
    assert given_up[0].startswith("the Ray cluster at 10.0.0.1:6379 went away (no answer for ")
    assert given_up[0].endswith("Ray said: RpcError: Timed out while waiting for GCS to become available.")
    cluster_watch.GONE.clear()

    def changed() -> None:  # not an answer from the cluster (an API that moved): no false alarm
        raise AttributeError("'Worker' object has no attribute 'gcs_client'")

    quiet: list[str] = []
    watch = cluster_watch.ClusterWatch("10.0.0.1:6379", quiet.append, ask=changed, gone_s=0.1, every_s=0.02,
                                       force_s=0.1).start()
    watch.thread.join(timeout=5)
    assert not watch.thread.is_alive() and not quiet and not watch.cause and not cluster_watch.gone()
