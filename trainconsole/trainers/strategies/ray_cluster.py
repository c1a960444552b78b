"""A search on a Ray cluster that spans machines (`--ray-address HOST:PORT`).

The driver runs here, beside the run directory the console reads; trials run on any node. Two things
must then hold on every node, and are made to or checked before a trial starts:
- the project: shipped to the workers with a Ray runtime environment (`py_modules`: this `trainconsole`
  package), so a node needs only Python and the project's dependencies (torch, ray);
- the run directory: Ray Tune keeps the trials' checkpoints under it (`ray_results`) and the trials read
  the console's stop requests there, so every node must reach it at the same path (a shared folder:
  NFS or a cluster file system). Each node is asked, with a task pinned to it, whether it sees a token
  file written here; a node that does not fails the search at once, naming the node and the folder.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from ..errors import TrainerError

#: How long the nodes get to answer whether they see the run directory.
CHECK_TIMEOUT_S = 120.0


class ClusterStorageError(TrainerError):
    """Some node of the cluster cannot reach the run directory."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.hint = ("put TRAINCONSOLE_HOME on a folder every node mounts at the same path (NFS, a cluster "
                     "file system), or run the search on one machine (no --ray-address)")


def runtime_env() -> dict[str, Any]:
    """What every worker of the search gets: this `trainconsole` package, whatever the node has installed."""
    package = Path(__file__).resolve().parents[2]
    return {"py_modules": [str(package)], "excludes": ["__pycache__", "*.pyc"]}


def check_storage(run_path: Path, timeout: float = CHECK_TIMEOUT_S) -> None:
    """Raise ClusterStorageError unless every alive node sees `run_path` (a token file written here)."""
    token = secrets.token_hex(8)
    marker = run_path / f".node-check-{token}"
    marker.write_text(token)
    try:
        blind = nodes_not_seeing(str(marker), token, timeout)
    finally:
        marker.unlink(missing_ok=True)
    if blind:
        raise ClusterStorageError(f"{len(blind)} node(s) of the Ray cluster cannot see the run directory "
                                  f"{run_path} ({', '.join(blind)}): trials keep their checkpoints there")


def nodes_not_seeing(marker: str, token: str, timeout: float = CHECK_TIMEOUT_S) -> list[str]:
    """`ip (node id)` of each alive node on which `marker` does not hold `token`."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    probe = ray.remote(num_cpus=0)(_holds)
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    answers = [probe.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False))
               .remote(marker, token) for n in nodes]
    ready, _ = ray.wait(answers, num_returns=len(answers), timeout=timeout)
    seen = {id(ref) for ref in ready}
    blind = []
    for node, ref in zip(nodes, answers, strict=True):
        if id(ref) not in seen or not ray.get(ref):
            blind.append(f"{node.get('NodeManagerAddress', '?')} ({node['NodeID'][:8]})")
    return blind


def wait_nodes(count: int, timeout: float = CHECK_TIMEOUT_S) -> None:
    """Until `count` nodes are alive in the cluster (those its Slurm job started); TrainerError if they
    do not all come within `timeout`."""
    import time

    import ray

    deadline = time.monotonic() + timeout
    while True:
        alive = sum(1 for n in ray.nodes() if n.get("Alive"))
        if alive >= count:
            return
        if time.monotonic() > deadline:
            raise TrainerError(f"only {alive} of the allocation's {count} Ray nodes joined the search's "
                               f"Ray in {timeout:.0f} s (see ray-nodes.log in the run directory)")
        time.sleep(0.5)


def node_name() -> str:
    """This worker's node, for the trial events: `ip (node id)`; '' outside Ray."""
    try:
        import ray

        context = ray.get_runtime_context()
        return f"{ray.util.get_node_ip_address()} ({context.get_node_id()[:8]})"
    except Exception:  # noqa: BLE001 - only a label
        return ""


def _holds(marker: str, token: str) -> bool:
    try:
        return Path(marker).read_text() == token and os.path.isdir(Path(marker).parent)
    except OSError:
        return False
