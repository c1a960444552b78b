"""The ranks of a ddp run on a Ray cluster: placed by Ray, joined by torch.distributed, watched from here.

The run's process joins the cluster (`ray.init(address)`, the project shipped to every node as for a
search: `ray_cluster.py`, which also checks that every node sees the run directory), reserves one bundle per
rank in a placement group, and starts one `RankActor` in each. Rank 0's actor names its node's address
and a free port there: the env:// rendezvous of every rank. Each actor then runs the same DDP rank as a
spawned process on one node does. A stop (SIGTERM here) goes to every actor; a `kill` of this process ends
the Ray job, and Ray ends the actors it owns and their placement group.

When a rank ends in an error or its process or node is lost, every rank is ended at once (none waits in a
collective). With `strategy.max_failures` left, the ranks are placed again (on the nodes left: as few as
`strategy.min_workers` if fewer fit) and resume from `checkpoints/last.pt`, after a `warning` that names
the lost node and the step they resume from; otherwise the run fails, naming the rank and its node.
"""

from __future__ import annotations

import os
import pickle
import time
from typing import Any

import ray
from ray.exceptions import RayActorError

from trainconsole.protocol import RunDir

from .. import checkpoint
from ..lifecycle.signals import StopFlag, install_stop_handlers
from . import ray_cluster as cluster
from .launcher import Call, RankFailed
from .ray_placement import Placed, place, placement_of, rank_count, uses_gpus
from .rendezvous import is_loopback

POLL_S = 0.2
#: How long the other ranks get to end (or report) once one has failed, before all are killed: enough
#: for Ray to tell a lost process from the collective errors it causes in the others.
SETTLE_S = 10.0


def run(strategy: Any, call: Call, run_dir: RunDir) -> Any:
    """Join the cluster, run the ranks (again after a loss, `max_failures` times), return rank 0's result."""
    spec = strategy.config["strategy"]
    stop = call.stop if call.stop is not None else StopFlag()
    ray.init(address=spec["ray_address"], log_to_driver=False, configure_logging=False,
             runtime_env=cluster.runtime_env())
    install_stop_handlers(stop)  # ray.init put its own handler on SIGTERM: a stop must stay graceful
    try:
        cluster.check_storage(run_dir.path.resolve())
        gpus = uses_gpus(spec["accelerator"])
        wanted = rank_count(spec, gpus)
        least, restarts_left = spec["min_workers"] or wanted, spec["max_failures"]
        while True:
            placed = place(wanted, least, gpus, spec["nnodes"])
            try:
                return Ranks(strategy, call, placed, gpus, stop).run()
            except RankFailed as failure:
                if not restarts_left or stop.is_set():
                    raise
                restarts_left -= 1
                resume_after(failure, strategy, call, run_dir, restarts_left)
            finally:
                placed.release()
    finally:
        ray.shutdown()


def rank_env(placed: Placed, rank: int) -> dict[str, str]:
    """Rank `rank`'s environment: the env:// rendezvous at rank 0's node, and our TRAINCONSOLE_ settings
    (Ray's workers have the environment of their node's raylet, not this process's)."""
    master = placed.where[0]
    env = {k: v for k, v in os.environ.items() if k.startswith("TRAINCONSOLE_")}
    local = [w["node"] for w in placed.where[:rank]].count(placed.where[rank]["node"])
    env |= {"MASTER_ADDR": master["ip"], "MASTER_PORT": str(master["port"]), "RANK": str(rank),
            "WORLD_SIZE": str(len(placed.where)), "LOCAL_RANK": str(local)}
    if is_loopback(master["ip"]):  # a cluster on one machine: gloo's own links stay on loopback too
        env["GLOO_SOCKET_IFNAME"] = "lo"
    return env


class Ranks:
    """One attempt: the ranks running on their actors, a stop forwarded, the first failure raised."""

    def __init__(self, strategy: Any, call: Call, placed: Placed, gpus: bool, stop: StopFlag) -> None:
        self.placed, self.stop, self.forwarded = placed, stop, False
        strategy.place(len(placed.actors), gpus, placement_of(placed))
        kwargs = {k: v for k, v in call.kwargs.items() if k != "stop"}
        payload = pickle.dumps((strategy, call.fn, call.args, kwargs))
        self.refs = {actor.run.remote(rank, rank_env(placed, rank), payload): rank
                     for rank, actor in enumerate(placed.actors)}
        self.answers: dict[int, dict[str, Any]] = {}

    def run(self) -> Any:
        """Wait for every rank; rank 0's result, or RankFailed for the first rank that failed."""
        pending = dict(self.refs)
        while pending:
            self.forward_stop()
            done, _ = ray.wait(list(pending), num_returns=1, timeout=POLL_S)
            for ref in done:
                self.answers[pending.pop(ref)] = self.answer(ref)
            if any("error" in a for a in self.answers.values()):
                self.settle(pending)
                raise self.failure()
        return self.answers[0].get("result")

    def answer(self, ref: Any) -> dict[str, Any]:
        """What a rank's run gave: its answer, or `lost` when its process (or node) went."""
        try:
            return ray.get(ref)
        except RayActorError as exc:
            return {"error": {"lost": True, "cause": f"process lost ({type(exc).__name__})",
                              "hint": "its process was killed or its node left the cluster",
                              "traceback": "", "t": time.time()}}

    def settle(self, pending: dict[Any, int]) -> None:
        """Give the other ranks a moment to end or report (a loss shows first as errors in the others),
        until one is known lost (the root cause then) or `SETTLE_S` has passed."""
        deadline = time.monotonic() + SETTLE_S
        while pending and not any(a["error"].get("lost") for a in self.answers.values() if "error" in a):
            left = deadline - time.monotonic()
            done, _ = ray.wait(list(pending), num_returns=1, timeout=max(0.0, left))
            for ref in done:
                self.answers[pending.pop(ref)] = self.answer(ref)
            if left <= 0:
                return

    def forward_stop(self) -> None:
        if self.stop.is_set() and not self.forwarded:
            for actor in self.placed.actors:
                actor.request_stop.remote()
            self.forwarded = True

    def failure(self) -> RankFailed:
        """The root cause: a lost rank before any report, else the earliest report; named with its node."""
        failed = {r: a["error"] for r, a in self.answers.items() if "error" in a}
        rank = min(failed, key=lambda r: (not failed[r].get("lost"), failed[r]["t"]))
        report, node = failed[rank], self.placed.where[rank]["node"]
        error = RankFailed(rank, f"{report['cause']} on node {node}", report["hint"], report["traceback"])
        error.event_fields |= {"node": node, "lost": bool(report.get("lost"))}
        return error


def resume_after(failure: RankFailed, strategy: Any, call: Call, run_dir: RunDir, left: int) -> None:
    """Say what was lost and where the ranks go on from; point the next attempt at the last checkpoint."""
    step = 0
    if run_dir.last_ckpt.exists():
        step = int(checkpoint.load(run_dir.last_ckpt).get("step", 0))
        call.kwargs["resume"] = str(run_dir.last_ckpt)
    strategy.restarts += 1
    fields = failure.event_fields
    call.kwargs["events"].emit(
        "warning", code="node_lost" if fields.get("lost") else "rank_failed", node=fields["node"],
        rank=failure.rank, resumed_from_step=step, restarts_left=left,
        message=f"{fields['cause']}; the ranks restart from step {step}"
        + (" (checkpoints/last.pt)" if step else " (no checkpoint yet)"),
        hint="strategy.max_failures sets how many restarts a run gets")
