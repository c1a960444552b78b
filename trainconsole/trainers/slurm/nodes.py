"""A run across the nodes of its Slurm allocation (`slurm.nodes > 1`, ddp or a script): one task per node.

The job's batch script starts `slurm_job` on every node (`srun --ntasks-per-node=1`). Each task learns
its node rank (`SLURM_NODEID`) and the rendezvous: the first node's address (its `NodeAddr`, as Slurm
reaches it) and a port derived from the job id, the same on every node without a word between them.
Node 0 is the run itself (its config gets the rendezvous; a script run's torchrun gets it from the
environment, `rendezvous`); every other node runs the same trainer (or script runner) on a directory of
its own, `RUN_DIR/nodes/<rank>/` (its config: its `node_rank`), whose log holds only that node's
`started` and final events, since only global rank 0 writes metrics and checkpoints.
"""

from __future__ import annotations

import os
import subprocess

from trainconsole.protocol import RunDir, dumps, load

#: The rendezvous port: this plus the job id modulo PORT_SPAN (the same on every node of the job).
PORT_BASE, PORT_SPAN = 29500, 20000
#: A script run's rendezvous across nodes, for its runner's torchrun: "nodes,rank,first node,port".
ENV_RENDEZVOUS = "TRAINCONSOLE_RENDEZVOUS"


def node_rank() -> int:
    """This task's node of the allocation (0 = the first)."""
    return int(os.environ.get("SLURM_NODEID") or 0)


def node_count() -> int:
    """The nodes of the job."""
    return int(os.environ.get("SLURM_JOB_NUM_NODES") or os.environ.get("SLURM_NNODES") or 1)


def first_node_addr() -> str:
    """The address of the allocation's first node (`NodeAddr`: its host name unless the cluster says)."""
    nodelist = os.environ.get("SLURM_JOB_NODELIST", "")
    names = scontrol("show", "hostnames", nodelist).split() or [nodelist]
    for field in scontrol("show", "node", names[0], "-o").split():
        if field.startswith("NodeAddr="):
            return field.split("=", 1)[1]
    return names[0]


def port() -> int:
    """The rendezvous port of this job."""
    return PORT_BASE + int(os.environ.get("SLURM_JOB_ID") or 0) % PORT_SPAN


def place(run: RunDir, command: list[str]) -> tuple[RunDir, list[str]]:
    """Set this node's part of the rendezvous; the directory this node's trainer runs on, and its
    command (node 0: the run's own; another node: its `nodes/<rank>/` directory)."""
    rank, count, addr = node_rank(), node_count(), first_node_addr()
    spec = {"nnodes": count, "node_rank": rank, "master_addr": addr, "master_port": port()}
    kind = run.read_info().get("kind") or "train"
    if kind == "script":  # its torchrun takes the rendezvous from the environment (`rendezvous`)
        os.environ[ENV_RENDEZVOUS] = f"{count},{rank},{addr},{port()}"
    if rank == 0:
        if kind != "script":
            _set_strategy(run, run, spec)
        return run, command
    node = RunDir(run.path / "nodes" / str(rank))
    (node.path / "checkpoints").mkdir(mode=0o700, parents=True, exist_ok=True)
    _set_strategy(run, node, spec if kind != "script" else {})
    node.write_info({"id": f"{run.id}-node{rank}", "kind": kind, "node_of": run.id, "node_rank": rank})
    return node, [str(node.path) if a == str(run.path) else a for a in command]


def rendezvous() -> list[str]:
    """torchrun's rendezvous for a script run: `--standalone` on one node; across the nodes of its
    Slurm job (`ENV_RENDEZVOUS`, set by `place`), a static one on the first node at the job's port."""
    spec = os.environ.get(ENV_RENDEZVOUS, "").split(",")
    if len(spec) != 4:
        return ["--standalone"]
    count, rank, addr, master_port = spec
    return [f"--nnodes={count}", f"--node-rank={rank}", f"--master-addr={addr}",
            f"--master-port={master_port}"]


def rendezvous_nodes() -> int:
    """The nodes of a script run's torchrun (`ENV_RENDEZVOUS`; 1 on one node)."""
    spec = os.environ.get(ENV_RENDEZVOUS, "").split(",")
    return int(spec[0]) if len(spec) == 4 and spec[0].isdigit() else 1


def _set_strategy(run: RunDir, target: RunDir, spec: dict[str, object]) -> None:
    config = load(run.config)
    config["strategy"].update(spec)
    tmp = target.path / f".config.toml.{os.getpid()}.tmp"
    tmp.write_text(dumps(config))
    os.replace(tmp, target.config)


def scontrol(*args: str) -> str:
    """`scontrol ARGS`' output ("" if it fails or hangs)."""
    try:
        done = subprocess.run(["scontrol", *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout if done.returncode == 0 else ""

