"""A real Ray cluster of several nodes on this machine, each started by `ray start` as on its own machine
(the head with `--head`, the others with `--address`), each node in its own process group, all ended."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from processes import wait_for

BIN = Path(sys.executable).parent

NODES = """
import json, sys, ray
ray.init(address=sys.argv[1], log_to_driver=False)
print(json.dumps({n["NodeID"]: n["Resources"] for n in ray.nodes() if n["Alive"]}))
"""


#: Ports Ray's components take by default: a free port given to another component must not be one of them
#: (the client server on 52365 once failed `ray start`: "dashboard_agent_http ... used by other components").
RAY_DEFAULT_PORTS = frozenset({6379, 8265, 8076, 10001, 52365})


def free_port() -> int:
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in RAY_DEFAULT_PORTS:
            return port


@contextlib.contextmanager
def ray_nodes(head: list[str], *others: list[str]) -> Iterator[dict[str, Any]]:
    """Start a head with `head`'s options and one node per entry of `others`; yield the cluster's
    `address`, `env` (token auth for every process), `temp` dir and each node's process group (`groups`,
    head first); SIGKILL every group at the end."""
    temp = tempfile.mkdtemp(prefix="tcr", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"}
    # Token auth, said to every process: left unset, `ray start --head` turns it on when ~/.ray/auth_token
    # exists (any earlier local ray.init may have written it) while `ray start --address` does not.
    env |= {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    common = ["--node-ip-address=127.0.0.1", "--disable-usage-stats", f"--temp-dir={temp}"]
    starts = [[str(BIN / "ray"), "start", "--head", f"--port={port}", "--include-dashboard=false",
               f"--ray-client-server-port={free_port()}", *head, *common]]
    starts += [[str(BIN / "ray"), "start", f"--address=127.0.0.1:{port}", *node, *common] for node in others]
    groups: list[int] = []
    try:
        for command in starts:
            proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    start_new_session=True, text=True)
            groups.append(proc.pid)
            out, _ = proc.communicate(timeout=120)
            assert proc.returncode == 0, out
        address = f"127.0.0.1:{port}"
        wait_for(lambda: len(nodes(address, env)) == len(starts), timeout=60, what="every node")
        yield {"address": address, "env": env, "temp": temp, "groups": groups}
    finally:
        for pgid in groups:  # the daemons `ray start` left behind are in its process group
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)


def nodes(address: str, env: dict[str, str]) -> dict[str, dict[str, float]]:
    """Each alive node's id and resources, asked by a driver of its own."""
    out = subprocess.run([sys.executable, "-c", NODES, address], env=env, capture_output=True, text=True,
                         timeout=120)
    return json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else {}
