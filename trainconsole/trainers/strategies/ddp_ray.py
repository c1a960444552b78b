"""DDP with its ranks placed by Ray on a cluster's nodes (`strategy.ray_address`, `run --ray-address`).

The run's process is the Ray driver: it places one rank per GPU (or a CPU slot, gloo, where the cluster has
no GPU) in a placement group, and each rank, a Ray actor, runs the same DDP rank as on one node
(`DistributedDataParallel.run_rank`: torch.distributed's env:// rendezvous at rank 0's node, the one loop,
only global rank 0 writing events and checkpoints into the one run directory). Placing, watching and
restarting are `ray_ranks.py`'s. Each rank is one "node" of one device in the parent's arithmetic
(nnodes = world size, node_rank = rank), so the parent's rank formulas hold unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from trainconsole.protocol import RunDir
from trainconsole.protocol.shapes import Mem

from ..errors import StrategyUnavailable
from . import launcher
from .base import Config, Strategy, given
from .ddp import DistributedDataParallel


class RayDistributedDataParallel(DistributedDataParallel):
    """A ddp run whose ranks Ray places: before `launch`, the plan; in a rank, that rank."""

    name = "ddp"

    def __init__(self, config: Config) -> None:
        Strategy.__init__(self, config, torch.device("cpu"))
        self.local_devices, self.local_rank = [self.device], 0
        self.nnodes, self.node_rank = 1, 0  # set by `place`: the world size and this rank
        self.backend = "gloo"
        self.sync = None
        #: Where the ranks run: `nodes` ("ip (node id)" each), `rank_nodes` (an index into nodes per rank)
        #: and `rank_pids`; filled in by the driver once Ray has placed them.
        self.placement: dict[str, Any] = {"nodes": [], "rank_nodes": [], "rank_pids": []}
        self.restarts = 0

    def place(self, world: int, gpus: bool, placement: dict[str, Any]) -> None:
        """The plan for `world` ranks (on GPUs or CPU slots) where Ray put them; checks the batch."""
        self.nnodes, self.placement = world, placement
        self.backend = "nccl" if gpus else "gloo"
        batch = self.config["train"]["batch_size"]
        if isinstance(batch, int) and batch < world:
            raise StrategyUnavailable(f"train.batch_size = {batch} is smaller than the {world} ranks")
        self.warnings = []
        if isinstance(batch, int) and batch % world:
            self.warnings.append({"code": "batch_not_divisible", "hint": "pick a multiple of the rank count",
                                  "message": f"train.batch_size = {batch} over {world} ranks: each rank "
                                  f"takes {batch // world} (global batch {batch // world * world})"})

    @property
    def is_local_zero(self) -> bool:
        """One run log for the whole cluster: only global rank 0 writes `started` and the final event."""
        return self.is_global_zero

    def launch(self, fn: Callable[..., Any], *args: Any, run_dir: RunDir | None = None, stop: Any = None,
               **kwargs: Any) -> Any:
        """Place the ranks on the cluster, run them, restart them after a loss (`strategy.max_failures`);
        return global rank 0's result."""
        from . import ray_ranks  # imports ray: only a run on a cluster pays for it

        if run_dir is None:
            raise StrategyUnavailable("a ddp run on a Ray cluster needs its run directory")
        call = launcher.Call(fn, args, given(kwargs, run_dir=run_dir), stop)
        return ray_ranks.run(self, call, run_dir)

    def run_rank(self, local_rank: int, fn: Callable[..., Any], args: tuple, kwargs: dict[str, Any]) -> Any:
        """In a rank's actor: this rank of the world (`local_rank` is its global rank), on its device."""
        self.node_rank = local_rank
        self.device = torch.device("cuda:0") if self.backend == "nccl" else torch.device("cpu")  # Ray's GPU
        self.local_devices = [self.device]
        return super().run_rank(0, fn, args, kwargs)

    def report_memory(self, mem: Mem) -> Mem:
        """Every rank's memory, each under the index of the node Ray put it on."""
        mem = super().report_memory(mem)
        nodes = self.placement["rank_nodes"]
        for entry in [*mem.get("ranks", []), *mem.get("devices", [])]:
            entry["node"] = nodes[entry["rank"]] if entry["rank"] < len(nodes) else entry.get("node")
        return mem

    def started_fields(self) -> dict[str, Any]:
        p = self.placement
        return {"backend": self.backend, "nnodes": len(p["nodes"]), "nodes": p["nodes"],
                "rank_nodes": p["rank_nodes"], "rank_pids": p["rank_pids"],
                "ray_address": self.config["strategy"]["ray_address"], "restarts": self.restarts,
                "local_batch_size": self.local_batch_size(self.config["train"]["batch_size"])}
