"""The env:// rendezvous of torch.distributed: what each rank's environment says about the group.

One node: MASTER_ADDR is 127.0.0.1 and MASTER_PORT a free loopback port unless given. Several nodes:
every node is launched with the same `nnodes`, `master_addr` and `master_port` and its own `node_rank`;
node 0's rank 0 serves the rendezvous store. Stdlib only.
"""

from __future__ import annotations

import ipaddress
import os
import random
import socket
import sys
from typing import Any

from ..errors import StrategyUnavailable

#: The lowest port a rendezvous is given when none is set (below it: the well-known services' ports).
PORTS_FROM = 10_000


def free_port(addr: str) -> int:
    """A TCP port that is free on `addr` right now, below the range the OS hands out itself (its ephemeral
    ports) where that leaves room: a port the OS picked, released until rank 0 binds it seconds later, is
    the one it may hand the next process that asks, and two runs started together got the same one
    (`EADDRINUSE`). Picked at random, so two runs of one moment meet once in ~20,000."""
    low = _ephemeral_low()
    for _ in range(64) if low - PORTS_FROM >= 1000 else ():
        port = random.randrange(PORTS_FROM, low)
        if _bindable(addr, port):
            return port
    with socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((addr, 0))
        return s.getsockname()[1]


def _bindable(addr: str, port: int) -> bool:
    with socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((addr, port))
        except OSError:
            return False
    return True


def _ephemeral_low() -> int:
    """The first port of the OS's own range (Linux's `ip_local_port_range`; elsewhere its usual 32768)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


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
