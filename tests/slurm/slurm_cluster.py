"""A real two-node Slurm on this machine, for the tests: munged, slurmctld and `slurmd -N n1` / `-N n2`,
with accounting where slurmdbd and MariaDB are installed (a mariadbd of its own, slurmdbd over it: `sacct`).

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

import psutil

#: The Debian packages the cluster needs (`make test` installs them when missing).
PACKAGES = ("slurm-wlm", "munge")
#: What accounting needs (without them the cluster runs with none, as before).
ACCOUNTING = ("slurmdbd", "mariadbd", "mariadb-install-db")
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
    accounting: bool = False

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
        """End every daemon, the last started first (slurmdbd before its database; TERM, then KILL after
        10 s)."""
        for proc in reversed(self.procs):
            _end(proc)
        shutil.rmtree(self.root / "db", ignore_errors=True)  # the database (its logs stay for a failure)

    def slurmd(self, node: str) -> subprocess.Popen[bytes]:
        """The running slurmd of `node`."""
        return next(p for p in reversed(self.procs) if Path(str(p.args[0])).name == "slurmd"
                    and list(p.args)[-2:] == ["-N", node])  # type: ignore[arg-type]

    def kill_slurmd(self, node: str) -> None:
        """SIGKILL `node`'s slurmd (its job steps' slurmstepd live on, as on a node whose daemon died)."""
        proc = self.slurmd(node)
        proc.kill()
        proc.wait(10)

    def start_slurmd(self, node: str) -> None:
        """Start `node`'s slurmd again (as an admin does); wait until both nodes are idle again."""
        _daemon(self, list(self.slurmd(node).args))  # type: ignore[arg-type]
        _wait_for(lambda: _idle(self), 90, "both nodes idle again")

    def node_state(self, node: str) -> str:
        """The node's state as sinfo gives it (`idle`, `alloc`, `down*`...)."""
        return self.run("sinfo", "-h", "-N", "-n", node, "-o", "%t").stdout.strip()

    def left(self) -> list[str]:
        """What of the cluster still runs: its daemons, and any process naming its directory."""
        alive = [" ".join(map(str, p.args)) for p in self.procs if p.poll() is None]
        return alive + [" ".join(p.info["cmdline"] or []) for p in psutil.process_iter(["cmdline"])
                        if str(self.root) in " ".join(p.info["cmdline"] or [])]

    def controller(self) -> subprocess.Popen[bytes]:
        """The running slurmctld."""
        return next(p for p in reversed(self.procs) if Path(str(p.args[0])).name == "slurmctld")

    def stop_controller(self) -> None:
        """End slurmctld (as in a failover or maintenance): every client then fails to reach it."""
        _end(self.controller())

    def start_controller(self) -> None:
        """Start slurmctld again, from its saved state; wait until it answers."""
        _daemon(self, list(self.controller().args))  # type: ignore[arg-type]
        _wait_for(lambda: self.run("squeue", "-h", timeout=10).returncode == 0, 60, "slurmctld answering")


def _end(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def accounting_installed() -> bool:
    """Whether slurmdbd and MariaDB are here (the cluster then keeps accounting)."""
    return all(shutil.which(name) for name in ACCOUNTING)


def write_conf(root: Path, dbd_port: int | None) -> Path:
    """slurm.conf for two one-CPU nodes on 127.0.0.1, each slurmd on a port of its own; accounting
    through slurmdbd on `dbd_port` (None: none)."""
    ctld, n1, n2 = free_ports(3)
    accounting = ["JobAcctGatherType=jobacct_gather/none", "AccountingStorageType=accounting_storage/none"]
    if dbd_port is not None:
        accounting = ["JobAcctGatherType=jobacct_gather/linux", "JobAcctGatherFrequency=task=2",
                      "AccountingStorageType=accounting_storage/slurmdbd", "AccountingStorageHost=localhost",
                      f"AccountingStoragePort={dbd_port}",
                      # the clients' munge socket towards slurmdbd (AuthInfo serves only slurmctld's)
                      f"AccountingStoragePass={root / 'munge.socket'}"]
    lines = [
        "ClusterName=tctest", "SlurmctldHost=localhost", f"SlurmctldPort={ctld}", f"SlurmdPort={n1}",
        "SlurmUser=root", "SlurmdUser=root", "AuthType=auth/munge", "CredType=cred/munge",
        f"AuthInfo=socket={root / 'munge.socket'}",
        f"StateSaveLocation={root / 'state'}", f"SlurmdSpoolDir={root / 'spool'}/%n",
        f"SlurmctldPidFile={root / 'slurmctld.pid'}", f"SlurmdPidFile={root / 'spool'}/%n.pid",
        f"SlurmctldLogFile={root / 'slurmctld.log'}", f"SlurmdLogFile={root / 'slurmd-%n.log'}",
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_CPU", "ReturnToService=2", "MpiDefault=none", "SwitchType=switch/none",
        *accounting,
        # a cancelled job's processes get TERM, then KILL this many seconds later (default 30)
        "KillWait=5", "InactiveLimit=0",
        # a node whose slurmd does not answer is DOWN (its jobs NODE_FAIL) this soon (default 300 s)
        "SlurmdTimeout=20",
        # with accounting, squeue forgets an ended job soon (sacct then says how it ended); slurmctld
        # purges about that often too (here, a job ended was forgotten after 14 s with 5, after 55 s with 30)
        f"MinJobAge={300 if dbd_port is None else 10}",
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
    dbd_port = free_ports(1)[0] if accounting_installed() else None
    cluster = Cluster(root, write_conf(root, dbd_port), accounting=dbd_port is not None)
    munged = ["munged", "-F", "-f", f"--socket={root / 'munge.socket'}", f"--key-file={key}",
              f"--pid-file={root / 'munged.pid'}", f"--log-file={root / 'munged.log'}",
              f"--seed-file={root / 'munged.seed'}"]
    try:
        _daemon(cluster, munged)
        _wait_for(lambda: (root / "munge.socket").exists(), 10, "munged's socket")
        if dbd_port is not None:
            _start_accounting(cluster, dbd_port)
        _daemon(cluster, ["slurmctld", "-D", "-i", "-f", str(cluster.conf)])
        for node in NODES:
            _daemon(cluster, ["slurmd", "-D", "-f", str(cluster.conf), "-N", node])
        _wait_for(lambda: _idle(cluster), 60, "both nodes idle")
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _start_accounting(cluster: Cluster, dbd_port: int) -> None:
    """A MariaDB of the cluster's own (its data under `root/db`, loopback only) and slurmdbd over it."""
    root = cluster.root
    db_port = free_ports(1)[0]
    done = subprocess.run(["mariadb-install-db", "--no-defaults", f"--datadir={root / 'db'}", "--user=root",
                           "--auth-root-authentication-method=normal", "--skip-test-db"],
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"the test Slurm: mariadb-install-db failed: {done.stderr[-2000:]}")
    _daemon(cluster, ["mariadbd", "--no-defaults", f"--datadir={root / 'db'}", "--user=root",
                      "--bind-address=127.0.0.1", f"--port={db_port}", f"--socket={root / 'db.sock'}",
                      f"--pid-file={root / 'mariadbd.pid'}", f"--log-error={root / 'mariadbd.log'}",
                      "--skip-grant-tables", "--innodb-buffer-pool-size=32M", "--innodb-log-file-size=8M"])
    _wait_for(lambda: (root / "db.sock").exists(), 60, "mariadbd's socket")
    conf = root / "slurmdbd.conf"  # slurmdbd reads it beside SLURM_CONF
    conf.write_text("\n".join([
        "AuthType=auth/munge", f"AuthInfo=socket={root / 'munge.socket'}", "DbdHost=localhost",
        f"DbdPort={dbd_port}", "SlurmUser=root", f"PidFile={root / 'slurmdbd.pid'}",
        f"LogFile={root / 'slurmdbd.log'}", "StorageType=accounting_storage/mysql", "StorageHost=127.0.0.1",
        f"StoragePort={db_port}", "StorageUser=root", "StorageLoc=slurm_acct_db"]) + "\n")
    conf.chmod(0o600)
    _daemon(cluster, ["slurmdbd", "-D"])
    _wait_for(lambda: cluster.run("sacctmgr", "-n", "list", "cluster", timeout=10).returncode == 0, 60,
              "slurmdbd answering")
    cluster.run("sacctmgr", "-i", "add", "cluster", "tctest")


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
