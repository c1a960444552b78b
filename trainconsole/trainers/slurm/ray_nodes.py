"""A search across the nodes of its Slurm allocation (`slurm.nodes > 1`, tune): one Ray cluster inside it.

Set up as Ray's own Slurm guide does: the head on the allocation's first node and `ray start --address`
on each other node, every one a job step (`srun --nodes=1 --ntasks=1 -w NODE ... --block`), and the
search's driver in the batch step (the run's own process, on the first node), joining the head. The
job's end ends them all: when the batch step exits (the search ended) or the job is cancelled (a kill),
Slurm ends every step of the job on every node, and `ray start --block` takes its Ray processes with it.
Each node's Ray files go to `RUN_DIR/ray/node<rank>` (through a short `/tmp/tcray-j<job>-<rank>` link:
Ray's sockets live there); its ports are the job's own, so that nodes sharing a machine do not collide.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import BinaryIO

from trainconsole.protocol import RunDir

from . import nodes as slurm_nodes

#: The search's driver joins this Ray (`HOST:PORT`) and waits for `ENV_NODES` nodes in it.
ENV_ADDRESS, ENV_NODES = "TRAINCONSOLE_RAY_ADDRESS", "TRAINCONSOLE_RAY_NODES"
#: The job's Ray ports: PORT_BASE + (job id % JOBS) * SPAN, then a few per node.
PORT_BASE, JOBS, SPAN, PER_NODE = 30000, 400, 64, 4
#: How long the head gets to open its port.
HEAD_WAIT_S = 120.0


def hostnames() -> list[str]:
    """The allocation's nodes, first node first."""
    nodelist = os.environ.get("SLURM_JOB_NODELIST", "")
    return slurm_nodes.scontrol("show", "hostnames", nodelist).split() or [nodelist]


def node_ip(name: str) -> str:
    """A node's address as Slurm reaches it (its `NodeAddr`), as an IP address for Ray."""
    addr = name
    for field in slurm_nodes.scontrol("show", "node", name, "-o").split():
        if field.startswith("NodeAddr="):
            addr = field.split("=", 1)[1]
    try:
        ip = socket.gethostbyname(addr)
    except OSError:
        return addr
    # a loopback NodeAddr (nodes sharing one machine, as a test cluster's): Ray would swap it for the
    # machine's own address when a node joins, so the head takes that one from the start
    return routable_ip() if ip.startswith("127.") else ip


def routable_ip() -> str:
    """This machine's address on its default route (no packet is sent), as Ray picks it."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("8.8.8.8", 53))
            return str(s.getsockname()[0])
        except OSError:
            return "127.0.0.1"


def base_port() -> int:
    """The first of this job's Ray ports."""
    return PORT_BASE + int(os.environ.get("SLURM_JOB_ID") or 0) % JOBS * SPAN


def temp_dir(run: RunDir, rank: int) -> str:
    """`RUN_DIR/ray/node<rank>`, through a short link under /tmp (Ray's socket paths are short)."""
    inside = run.path.resolve() / "ray" / f"node{rank}"
    inside.mkdir(mode=0o700, parents=True, exist_ok=True)
    link = Path("/tmp") / f"tcray-j{os.environ.get('SLURM_JOB_ID', '0')}-{rank}"
    for old in link.parent.glob("tcray-j*"):  # the links of searches whose run directory is gone
        if old.is_symlink() and not old.exists():
            old.unlink(missing_ok=True)
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(inside, target_is_directory=True)
    return str(link)


def cpus() -> str:
    """The CPUs Ray may use on a node: the job's share of it (not the machine's, which others share)."""
    return os.environ.get("SLURM_CPUS_PER_TASK") or os.environ.get("SLURM_CPUS_ON_NODE") or "1"


def ray_start(run: RunDir, rank: int, ip: str, head: str) -> list[str]:
    """`ray start ... --block` for the node of `rank` (0: the head) at `ip`."""
    port = base_port() + 2 + rank * PER_NODE
    argv = [sys.executable, "-m", "ray.scripts.scripts", "start", "--block", f"--node-ip-address={ip}",
            f"--temp-dir={temp_dir(run, rank)}", "--disable-usage-stats",
            f"--dashboard-agent-listen-port={port}", f"--dashboard-agent-grpc-port={port + 1}",
            f"--runtime-env-agent-port={port + 2}", f"--metrics-export-port={port + 3}",
            f"--num-cpus={cpus()}"]
    if rank == 0:
        return [*argv, "--head", f"--port={head.rsplit(':', 1)[1]}", "--include-dashboard=false",
                f"--ray-client-server-port={base_port() + 1}"]
    return [*argv, f"--address={head}"]


def start(run: RunDir) -> list[subprocess.Popen[bytes]]:
    """Start the allocation's Ray (the head, then a worker on each other node, each a job step) and
    tell the driver where it is (ENV_ADDRESS, ENV_NODES); the steps' `srun` clients."""
    names = hostnames()
    ips = [node_ip(name) for name in names]
    head = f"{ips[0]}:{base_port()}"
    # the job's own token: every node's Ray and the driver have it (srun and exec pass the environment on)
    os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(32))
    with open(run.path / "ray-nodes.log", "ab") as log:  # the steps' output (each keeps its own copy)
        steps = [_step(names[0], ray_start(run, 0, ips[0], head), log)]
        _wait_open(ips[0], base_port(), steps[0])
        steps += [_step(name, ray_start(run, rank, ip, head), log)
                  for rank, (name, ip) in enumerate(zip(names, ips, strict=True)) if rank > 0]
    os.environ[ENV_ADDRESS], os.environ[ENV_NODES] = head, str(len(names))
    return steps


def _step(node: str, argv: list[str], log: BinaryIO) -> subprocess.Popen[bytes]:
    """One job step on `node` (its `srun` client stays a child of the batch step: ended with it)."""
    srun = ["srun", "--nodes=1", "--ntasks=1", f"--nodelist={node}", "--kill-on-bad-exit=1", *argv]
    return subprocess.Popen(srun, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)


def _wait_open(ip: str, port: int, step: subprocess.Popen[bytes]) -> None:
    """Until the head's port takes connections (raise if its step ended first, or after HEAD_WAIT_S)."""
    deadline = time.monotonic() + HEAD_WAIT_S
    while time.monotonic() < deadline and step.poll() is None:
        try:
            with socket.create_connection((ip, port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"the search's Ray head did not open {ip}:{port} (see ray-nodes.log)")
