"""One rank of a ddp run on a Ray cluster, as a Ray actor (`ray_ranks.py` places and watches them).

It runs the rank exactly as a spawned process on one node does (`strategy.run_rank`), with the rank's
environment (the rendezvous) set before the rank's modules are unpickled, and a second call slot
(`max_concurrency=2`) so that a stop reaches it while it trains.
"""

from __future__ import annotations

import os
import pickle
import time
from typing import Any

import ray

from ..lifecycle.signals import StopFlag
from ..troubles.explain import explain, traceback_tail
from .rendezvous import free_port


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
