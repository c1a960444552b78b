"""Helpers for the tests of a home shared by hosts: a script that sleeps (with a child, to be a tree),
the CLI, a run's rows and events, and a second "host" made of a PID+UTS namespace on this machine."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import psutil

EXE = str(Path(sys.executable).parent / "trainconsole")
OTHER = "other-host"

#: A script run that prints a metric line now and then, with a sleeping child (so a kill has a tree to
#: end); a SIGTERM ends both (its stop), and the marker on their command lines finds them from outside.
SLEEPER = """\
import signal, subprocess, sys, time
marker = sys.argv[1]
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", marker])
def stop(signum, frame):
    child.kill()
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
for step in range(1, 100000):
    print(f"step {step} loss {1 / step:.4f}", flush=True)
    time.sleep(0.5)
"""


def sleeper_script(tmp_path: Path) -> tuple[Path, str]:
    """The sleeper written to a file, and a fresh marker for its processes."""
    path = tmp_path / "sleeper.py"
    path.write_text(SLEEPER)
    return path, f"tc-host-{uuid.uuid4().hex}"


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`trainconsole ARGS` on this host."""
    return subprocess.run([EXE, *args], capture_output=True, text=True, timeout=timeout)


def row(run_id: str) -> dict[str, Any]:
    """The run's `ls --json` row, as this host sees it."""
    out = cli("ls", "--json")
    assert out.returncode == 0, out.stderr
    return {r["id"]: r for r in json.loads(out.stdout)}[run_id]


def events(home: Path, run_id: str) -> list[dict[str, Any]]:
    """Every event of the run."""
    path = home / "runs" / run_id / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def marked(marker: str) -> list[psutil.Process]:
    """The sleeper's live processes (any namespace: this is the outer table): python with the marker as
    its last argument, run as a script (`-u`, by the runner) or a command (`-c`, its child); not the
    commands that carried the marker to them (unshare, the CLI)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmd = proc.info["cmdline"] or []
        ours = cmd[-1:] == [marker] and cmd[1:2] in (["-u"], ["-c"])
        if ours and proc.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(proc)
    return found


def namespace_refusal() -> str | None:
    """Why a PID+UTS namespace with its own /proc cannot be made here (None: it can)."""
    if shutil.which("unshare") is None:
        return "no unshare command on this machine"
    try:
        out = subprocess.run(["unshare", "--pid", "--uts", "--fork", "--mount-proc", "hostname", OTHER],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"unshare failed: {e}"
    return None if out.returncode == 0 else f"unshare refused: {out.stderr.strip() or out.returncode}"


class OtherHost:
    """A second host on this machine: a PID namespace (its own process table) and UTS namespace (its own
    hostname) sharing the file system, so the same TRAINCONSOLE_HOME. Its init is a shell that starts a
    run with the CLI, prints the run id, and then sleeps, so the run's processes live in it until `gone`
    kills the namespace (the kernel ends every process in a PID namespace whose init dies)."""

    def __init__(self, *run_args: str) -> None:
        shell = f'hostname {OTHER} && "$0" run "$@" && exec sleep 600'
        self.proc = subprocess.Popen(
            ["unshare", "--pid", "--uts", "--fork", "--mount-proc", "--kill-child",
             "sh", "-c", shell, EXE, *run_args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line:
            said = self.proc.stderr.read() if self.proc.stderr else ""
            raise AssertionError(f"no run started on {OTHER}: {said}")
        self.run_id = line.split()[0]

    def gone(self) -> None:
        """Kill the host: its init, and with it every process in its namespace."""
        init = psutil.Process(self.proc.pid).children()
        for proc in init:
            proc.kill()
        self.proc.kill()
        self.proc.wait(timeout=30)
