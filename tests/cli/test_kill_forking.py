"""A kill takes a run whose processes keep starting others in sessions of their own (as a search's raylet
starts workers) while the kill is under way, and a run whose orphans made groups of their own (a Ray
worker whose raylet is gone): none is left."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
from processes import wait_for

from trainconsole import protocol
from trainconsole.control import runs

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


ORPHANS = f"""
import subprocess, sys, time
# A middle process starts three in groups of their own and exits: they go to init, out of the run's tree
# and group, as a Ray worker does once its raylet is gone, or a trial's DataLoader worker once its trial's is.
middle = "import subprocess; [subprocess.Popen(['sleep', '{MARK}'], process_group=0) for _ in range(3)]"
subprocess.run([sys.executable, "-c", middle])
time.sleep(120)
"""


def test_a_kill_leaves_no_orphan_that_made_a_group_of_its_own(home: Path) -> None:
    run = runs.launch(protocol.load(EXAMPLES / "digits.toml"), root=protocol.home(),
                      argv=[sys.executable, "-c", ORPHANS])
    try:
        def reparented() -> list[psutil.Process]:  # the middle process has exited (it may still be running)
            found, tree = marked(), runs.leader(run).children(recursive=True)
            return found if len(found) == 3 and not {p.pid for p in found} & {p.pid for p in tree} else []

        orphans = wait_for(reparented, timeout=30, what="the orphans, out of the run's tree")
        assert all(os.getpgid(p.pid) == p.pid for p in orphans)  # and out of its group
        assert runs.kill(run) == []
        time.sleep(3.0)
        left = [p for p in orphans if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        assert left == [], f"{len(left)} left"
    finally:
        for proc in marked():
            proc.kill()
