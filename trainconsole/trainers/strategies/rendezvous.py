"""The env:// rendezvous of torch.distributed: what each rank's environment says about the group.

One node: MASTER_ADDR is 127.0.0.1 and MASTER_PORT a free loopback port unless given. Several nodes:
every node is launched with the same `nnodes`, `master_addr` and `master_port` and its own `node_rank`;
node 0's rank 0 serves the rendezvous store. Stdlib only.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
from typing import Any

from ..errors import StrategyUnavailable


def free_port(addr: str) -> int:
    """A TCP port that is free on `addr` right now (the OS picks it)."""
    with socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((addr, 0))
        return s.getsockname()[1]


def is_loopback(addr: str) -> bool:
    """True for 127.x.x.x, ::1 and `localhost`."""
    if addr == "localhost":
        return True
    try:
        return ipaddress.ip_address(addr).is_loopback
    except ValueError:
        return False


def rank_envs(spec: dict[str, Any], local_world: int) -> list[dict[str, str]]:
    """The environment of each local rank, for a `[strategy]` section and `local_world` ranks per node."""
    addr, port, nnodes, node = spec["master_addr"], spec["master_port"], spec["nnodes"], spec["node_rank"]
    if not port:
        if nnodes > 1:
            raise StrategyUnavailable("strategy.master_port must be set (the same on every node) when "
                                      "strategy.nnodes > 1")
        port = free_port(addr)
    common = {"MASTER_ADDR": addr, "MASTER_PORT": str(port), "WORLD_SIZE": str(nnodes * local_world),
              "LOCAL_WORLD_SIZE": str(local_world), "GROUP_RANK": str(node), "NODE_RANK": str(node)}
    if is_loopback(addr) and sys.platform.startswith("linux") and "GLOO_SOCKET_IFNAME" not in os.environ:
        common["GLOO_SOCKET_IFNAME"] = "lo"  # a loopback rendezvous keeps gloo's own links on loopback too
    return [{**common, "RANK": str(node * local_world + i), "LOCAL_RANK": str(i)} for i in range(local_world)]
