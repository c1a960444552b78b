"""The ranks of a ddp run on a Ray cluster: placed by Ray, joined by torch.distributed, watched from here.

The run's process joins the cluster (`ray.init(address)`, the project shipped to every node as for a
search: `tune/cluster.py`, which also checks that every node sees the run directory), reserves one bundle
per rank in a placement group, and starts one `RankActor` in each. Rank 0's actor names its node's address
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
from dataclasses import dataclass
from typing import Any

import ray
from ray.exceptions import GetTimeoutError, RayActorError
from ray.util.placement_group import placement_group, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from .. import checkpoint
from ..errors import StrategyUnavailable
from ..protocol import RunDir
from ..signals import StopFlag, install_stop_handlers
from ..troubles.explain import explain, traceback_tail
from ..tune import cluster
from .launcher import Call, RankFailed
from .rendezvous import free_port, is_loopback

POLL_S = 0.2
#: How long the other ranks get to end (or report) once one has failed, before all are killed: enough
#: for Ray to tell a lost process from the collective errors it causes in the others.
SETTLE_S = 10.0
#: How long placing the ranks may take (nodes joining, a lost node's resources leaving the cluster).
PLACE_TIMEOUT_S = float(os.environ.get("TRAINCONSOLE_RAY_PLACE_TIMEOUT_S") or 180)
#: How long one try at a placement waits before the cluster's capacity is read again.
PLACE_TRY_S = 10.0


class RankActor:
    """One rank in a Ray worker: where it runs, the rank itself, and its stop (a second call slot)."""

    def __init__(self) -> None:
        self.stop = StopFlag()

    def where(self) -> dict[str, Any]:
        """This worker's node id and pid."""
        return {"node_id": ray.get_runtime_context().get_node_id(), "pid": os.getpid()}

    def free_port(self, addr: str) -> int:
        """A TCP port free on `addr` of this node now (rank 0's: the rendezvous)."""
        return free_port(addr)

    def run(self, rank: int, env: dict[str, str], payload: bytes) -> dict[str, Any]:
        """Run the rank: `{"result": ...}` (rank 0's outcome) or `{"error": cause, hint, traceback, t}`."""
        os.environ.update(env)  # before unpickling: the rank's modules read their settings at import
        config = None
        try:
            strategy, fn, args, kwargs = pickle.loads(payload)
            config = strategy.config
            result = strategy.run_rank(rank, fn, args, {**kwargs, "stop": self.stop})
            return {"result": result if rank == 0 else None}
        except BaseException as exc:  # noqa: BLE001 - every failure must reach the driver
            why = explain(exc, config)
            return {"error": {"cause": why.cause, "hint": why.hint, "traceback": traceback_tail(exc),
                              "t": time.time()}}

    def request_stop(self) -> None:
        """The run was asked to stop: the ranks agree on a step, checkpoint and end."""
        self.stop.set()


@dataclass
class Placed:
    """The ranks Ray placed: the placement group, an actor per rank (rank order) and where each runs."""

    group: Any
    actors: list[Any]
    where: list[dict[str, Any]]

    def release(self) -> None:
        """End every actor and free the group's resources."""
        for actor in self.actors:
            ray.kill(actor, no_restart=True)
        remove_placement_group(self.group)


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
        least = spec["min_workers"] or wanted
        for attempt in range(spec["max_failures"] + 1):
            placed = place(wanted, least, gpus, spec["nnodes"])
            try:
                return Ranks(strategy, call, placed, gpus, stop).run()
            except RankFailed as failure:
                if attempt == spec["max_failures"] or stop.is_set():
                    raise
                resume_after(failure, strategy, call, run_dir, spec["max_failures"] - attempt)
            finally:
                placed.release()
        raise AssertionError("unreachable")
    finally:
        ray.shutdown()


def uses_gpus(accelerator: str) -> bool:
    """GPU ranks when the cluster has GPUs (or `cuda` demands them); gloo CPU ranks otherwise."""
    has = ray.cluster_resources().get("GPU", 0) >= 1
    if accelerator == "cuda" and not has:
        raise StrategyUnavailable("strategy.accelerator = 'cuda' but the Ray cluster has no GPU")
    return has and accelerator != "cpu"


def rank_count(spec: dict[str, Any], gpus: bool) -> int:
    """`strategy.devices` ranks, or for `auto` one per GPU of the cluster (CPU: one per node with CPUs);
    `strategy.nnodes` at least."""
    if isinstance(spec["devices"], int):
        return spec["devices"]
    if gpus:
        return max(spec["nnodes"], int(ray.cluster_resources().get("GPU", 0)))
    nodes = [n for n in ray.nodes() if n.get("Alive") and n["Resources"].get("CPU", 0) >= 1]
    return max(spec["nnodes"], len(nodes))


def bundle(gpus: bool) -> dict[str, float]:
    """What one rank reserves."""
    return {"GPU": 1.0, "CPU": 1.0} if gpus else {"CPU": 1.0}


def capacity(gpus: bool) -> int:
    """How many ranks the cluster's alive nodes could hold, idle."""
    need = bundle(gpus)
    total = 0
    for node in ray.nodes():
        if node.get("Alive"):
            total += int(min(node["Resources"].get(k, 0) // v for k, v in need.items()))
    return total


def place(wanted: int, least: int, gpus: bool, nnodes: int) -> Placed:
    """A placement group of `wanted` ranks (fewer, down to `least`, if no more fit) and their actors."""
    deadline = time.monotonic() + PLACE_TIMEOUT_S
    while True:
        count = min(wanted, capacity(gpus))
        if count >= least:
            group = placement_group([bundle(gpus)] * count, strategy="SPREAD" if nnodes > 1 else "PACK")
            try:
                ray.get(group.ready(), timeout=PLACE_TRY_S)
                return start_actors(group, count, gpus, nnodes)
            except GetTimeoutError:
                remove_placement_group(group)
        if time.monotonic() > deadline:
            raise StrategyUnavailable(f"the Ray cluster cannot place {wanted} ranks (at least {least}) of "
                                      f"{bundle(gpus)} each: it holds {capacity(gpus)} now")
        time.sleep(1.0)


def start_actors(group: Any, count: int, gpus: bool, nnodes: int) -> Placed:
    """One actor per bundle, in rank order (ranks of one node consecutive); where each one runs."""
    need = bundle(gpus)
    actor_class = ray.remote(num_cpus=need["CPU"], num_gpus=need.get("GPU", 0), max_concurrency=2,
                             max_restarts=0)(RankActor)
    actors = [actor_class.options(scheduling_strategy=PlacementGroupSchedulingStrategy(group, i)).remote()
              for i in range(count)]
    where = ray.get([a.where.remote() for a in actors], timeout=PLACE_TIMEOUT_S)
    addresses = {n["NodeID"]: n["NodeManagerAddress"] for n in ray.nodes()}  # what the nodes reach it by
    for w in where:
        w["ip"] = addresses[w["node_id"]]
        w["node"] = f"{w['ip']} ({w['node_id'][:8]})"
    order = sorted(range(count), key=lambda i: (where[i]["node"], i))
    placed = Placed(group, [actors[i] for i in order], [where[i] for i in order])
    nodes = {w["node"] for w in placed.where}
    if len(nodes) < nnodes:
        placed.release()
        raise StrategyUnavailable(f"strategy.nnodes = {nnodes}, but Ray placed the {count} ranks on "
                                  f"{len(nodes)} node(s); lower strategy.nnodes or add nodes")
    placed.where[0]["port"] = ray.get(placed.actors[0].free_port.remote(placed.where[0]["ip"]),
                                      timeout=PLACE_TIMEOUT_S)
    return placed


def placement_of(placed: Placed) -> dict[str, Any]:
    """The `started` event's view of where the ranks run."""
    nodes = list(dict.fromkeys(w["node"] for w in placed.where))
    return {"nodes": nodes, "rank_nodes": [nodes.index(w["node"]) for w in placed.where],
            "rank_pids": [w["pid"] for w in placed.where]}


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
        rank=failure.rank, resumed_from_step=step, restarts_left=left - 1,
        message=f"{fields['cause']}; the ranks restart from step {step}"
        + (" (checkpoints/last.pt)" if step else " (no checkpoint yet)"),
        hint="strategy.max_failures sets how many restarts a run gets")
