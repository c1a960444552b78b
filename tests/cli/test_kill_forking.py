"""A kill takes a run whose processes keep starting others in sessions of their own (as a search's raylet
starts workers) while the kill is under way: none is left."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import psutil
from processes import wait_for

from trainconsole.console.control import runs
from trainconsole.trainers import protocol

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MARK = "1207.5"  # `sleep 1207.5`: the processes this test starts, by their command line
SPAWNER = f"""
import subprocess, time
while True:
    subprocess.Popen(["sleep", "{MARK}"], start_new_session=True)
    time.sleep(0.004)
"""
RUN = f"""
import subprocess, sys, time
for _ in range(12):  # processes the kill meets first
    subprocess.Popen(["sleep", "{MARK}"])
subprocess.Popen([sys.executable, "-c", {SPAWNER!r}])
time.sleep(120)
"""


def marked() -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if (proc.info["cmdline"] or [])[-1:] == [MARK]:
            found.append(proc)
    return found


def test_a_kill_leaves_no_process_started_while_it_ran(home: Path) -> None:
    run = runs.launch(protocol.load(EXAMPLES / "digits.toml"), root=protocol.home(),
                      argv=[sys.executable, "-c", RUN])
    try:
        wait_for(lambda: len(marked()) > 40, timeout=30, what="the run's processes")
        assert runs.kill(run) == []
        time.sleep(3.0)
        left = [p for p in marked() if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        assert left == [], f"{len(left)} left"
    finally:
        for proc in marked():
            proc.kill()
        subprocess.run(["true"])
