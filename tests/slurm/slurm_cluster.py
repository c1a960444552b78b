"""A real two-node Slurm on this machine, for the tests: munged, slurmctld and `slurmd -N n1` / `-N n2`.

Everything lives in one temp directory (key, sockets, state, spool, logs, slurm.conf), so nothing
system-wide is touched: the daemons run as root with options and a config of their own, the clients find
them through `SLURM_CONF`. `start` returns a `Cluster`; `Cluster.stop` ends every daemon it started.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

#: The Debian packages the cluster needs (`make test` installs them when missing).
PACKAGES = ("slurm-wlm", "munge")
DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel")
NODES = ("n1", "n2")


def missing() -> str | None:
    """Why no cluster can be started here (a program missing, not root), or None."""
    absent = [name for name in DAEMONS if shutil.which(name) is None]
    if absent:
        return f"Slurm is not installed ({', '.join(absent)} missing): apt-get install {' '.join(PACKAGES)}"
    if os.geteuid() != 0:
        return "the test Slurm runs its daemons as root"
    return None


def free_ports(count: int) -> list[int]:
    """`count` distinct free TCP ports on the loopback interface."""
    socks = [socket.socket() for _ in range(count)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


@dataclass
class Cluster:
    """A started test cluster: its directory, config and daemons."""

    root: Path
    conf: Path
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        """The environment a Slurm client needs to reach this cluster."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """A Slurm client command against this cluster (its output as text)."""
        return subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=timeout)

    def jobs(self) -> list[str]:
        """The ids of the jobs squeue shows pending or running."""
        out = self.run("squeue", "-h", "-o", "%i").stdout
        return out.split()

    def cancel_all(self) -> None:
        """Cancel every job and wait until squeue shows none (a test leaves the cluster empty)."""
        self.run("scancel", "--user", "root")
        deadline = time.monotonic() + 30
        while self.jobs() and time.monotonic() < deadline:
            time.sleep(0.2)

    def logs(self) -> str:
        """The daemons' logs (for a failure's message)."""
        return "\n".join(f"== {p.name}\n{p.read_text(errors='replace')[-3000:]}"
                         for p in sorted(self.root.glob("*.log")))

    def stop(self) -> None:
        """End every daemon (TERM, then KILL after 10 s)."""
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in reversed(self.procs):
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


def write_conf(root: Path) -> Path:
    """slurm.conf for two one-CPU nodes on 127.0.0.1, each slurmd on a port of its own."""
    ctld, n1, n2 = free_ports(3)
    lines = [
        "ClusterName=tctest", "SlurmctldHost=localhost", f"SlurmctldPort={ctld}", f"SlurmdPort={n1}",
        "SlurmUser=root", "SlurmdUser=root", "AuthType=auth/munge", "CredType=cred/munge",
        f"AuthInfo=socket={root / 'munge.socket'}",
        f"StateSaveLocation={root / 'state'}", f"SlurmdSpoolDir={root / 'spool'}/%n",
        f"SlurmctldPidFile={root / 'slurmctld.pid'}", f"SlurmdPidFile={root / 'spool'}/%n.pid",
        f"SlurmctldLogFile={root / 'slurmctld.log'}", f"SlurmdLogFile={root / 'slurmd-%n.log'}",
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_CPU", "ReturnToService=2", "MpiDefault=none", "SwitchType=switch/none",
        "JobAcctGatherType=jobacct_gather/none", "AccountingStorageType=accounting_storage/none",
        # a cancelled job's processes get TERM, then KILL this many seconds later (default 30)
        "KillWait=5", "InactiveLimit=0", "SlurmdTimeout=30", "MinJobAge=300",
        f"NodeName=n1 NodeAddr=127.0.0.1 Port={n1} CPUs=1 State=UNKNOWN",
        f"NodeName=n2 NodeAddr=127.0.0.1 Port={n2} CPUs=1 State=UNKNOWN",
        "PartitionName=debug Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP",
    ]
    conf = root / "slurm.conf"
    conf.write_text("\n".join(lines) + "\n")
    return conf


def start(root: Path) -> Cluster:
    """Start munged, slurmctld and two slurmd under `root`; wait until both nodes are idle."""
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    for sub in ("state", "spool", "spool/n1", "spool/n2"):
        (root / sub).mkdir(mode=0o700, exist_ok=True)
    key = root / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    cluster = Cluster(root, write_conf(root))
    munged = ["munged", "-F", "-f", f"--socket={root / 'munge.socket'}", f"--key-file={key}",
              f"--pid-file={root / 'munged.pid'}", f"--log-file={root / 'munged.log'}",
              f"--seed-file={root / 'munged.seed'}"]
    try:
        _daemon(cluster, munged)
        _wait_for(lambda: (root / "munge.socket").exists(), 10, "munged's socket")
        _daemon(cluster, ["slurmctld", "-D", "-i", "-f", str(cluster.conf)])
        for node in NODES:
            _daemon(cluster, ["slurmd", "-D", "-f", str(cluster.conf), "-N", node])
        _wait_for(lambda: _idle(cluster), 60, "both nodes idle")
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _daemon(cluster: Cluster, argv: list[str]) -> None:
    log = open(cluster.root / f"{Path(argv[0]).name}-{len(cluster.procs)}.out", "ab")
    with log:
        cluster.procs.append(subprocess.Popen(argv, env=cluster.env, stdin=subprocess.DEVNULL, stdout=log,
                                              stderr=subprocess.STDOUT, start_new_session=True))


def _idle(cluster: Cluster) -> bool:
    out = cluster.run("sinfo", "-h", "-N", "-o", "%N %t").stdout.split()
    states = dict(zip(out[::2], out[1::2], strict=False))
    return all(states.get(node) == "idle" for node in NODES)


def _wait_for(ready: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():  # type: ignore[operator]
            return
        time.sleep(0.2)
    raise TimeoutError(f"the test Slurm: no {what} after {timeout:.0f} s")
