"""Where Ray puts the ranks of a ddp run: how many, what each reserves, the placement group, the actors.

One bundle per rank: a GPU (and a CPU) where the cluster has GPUs, else a CPU slot (gloo). A group that
cannot be placed within a few seconds is given up and tried again with what the alive nodes can hold now,
down to `strategy.min_workers` ranks (a lost node leaves the cluster only after Ray's health checks).
The ranks of one node get consecutive numbers; rank 0's node and a free port there are the rendezvous.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

import ray
from ray.exceptions import GetTimeoutError
from ray.util.placement_group import placement_group, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from ..errors import ClusterTooSmall, StrategyUnavailable
from .ray_actor import RankActor

#: How long placing the ranks may take (nodes joining, a lost node's resources leaving the cluster).
PLACE_TIMEOUT_S = float(os.environ.get("TRAINCONSOLE_RAY_PLACE_TIMEOUT_S") or 180)
#: How long one try at a placement waits before the cluster's capacity is read again.
PLACE_TRY_S = 10.0


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
            raise ClusterTooSmall(f"the Ray cluster cannot place {wanted} ranks (at least {least}) of "
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
        raise ClusterTooSmall(f"strategy.nnodes = {nnodes}, but Ray placed the {count} ranks on "
                              f"{len(nodes)} node(s)")
    placed.where[0]["port"] = ray.get(placed.actors[0].free_port.remote(placed.where[0]["ip"]),
                                      timeout=PLACE_TIMEOUT_S)
    return placed


def placement_of(placed: Placed) -> dict[str, Any]:
    """The `started` event's view of where the ranks run."""
    nodes = list(dict.fromkeys(w["node"] for w in placed.where))
    return {"nodes": nodes, "rank_nodes": [nodes.index(w["node"]) for w in placed.where],
            "rank_pids": [w["pid"] for w in placed.where]}
