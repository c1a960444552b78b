"""Lifecycle operations on one run never interleave: races of resume, kill, stop and launch.

The run's process is a cheap sleeper (a run launched with its own argv), so each race costs only the
CLI's start-up; the guards under test are the real ones (the per-run lock and `protocol.run_status`).
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import psutil
import pytest

from trainconsole import protocol
from trainconsole.control import runs

EXE = str(Path(sys.executable).parent / "trainconsole")
SLEEPER = "import sys, time; time.sleep(120)"


def sleepers(marker: str) -> list[psutil.Process]:
    """Live processes started with this marker on their command line."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if marker in (proc.info["cmdline"] or []) and proc.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(proc)
    return found


def launch_sleeper(home: Path) -> tuple[protocol.RunDir, str]:
    marker = f"tc-race-{uuid.uuid4().hex}"
    run = runs.launch(protocol.defaults(), name="sleeper", root=protocol.home(),
                      argv=[sys.executable, "-c", SLEEPER, marker])
    return run, marker


def cli(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([EXE, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(*procs: subprocess.Popen[str]) -> list[tuple[int, str]]:
    return [(p.wait(30), p.communicate()[1]) for p in procs]


@pytest.mark.slow
def test_two_concurrent_resumes_start_exactly_one_process(home: Path) -> None:
    run, marker = launch_sleeper(home)
    try:
        for _ in range(8):
            assert runs.kill(run) == [] and protocol.run_status(run) == "killed"
            assert sleepers(marker) == []
            results = finish(cli("resume", run.id), cli("resume", run.id))
            codes = sorted(code for code, _ in results)
            assert codes == [0, 2], results
            refused = next(err for code, err in results if code == 2)
            assert f"run {run.id} is already running" in refused and "Traceback" not in refused
            assert len(sleepers(marker)) == 1
            assert protocol.run_status(run) == "running"
    finally:
        runs.kill(run)


def test_r_pressed_twice_in_one_process_starts_one(home: Path) -> None:
    run, marker = launch_sleeper(home)
    try:
        runs.kill(run)
        errors: list[BaseException] = []

        def resume() -> None:
            try:
                runs.resume(run)
            except protocol.RunBusy as e:
                errors.append(e)

        threads = [threading.Thread(target=resume) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert len(errors) == 1 and len(sleepers(marker)) == 1
    finally:
        runs.kill(run)


@pytest.mark.slow
def test_resume_against_kill_leaves_status_and_processes_agreeing(home: Path) -> None:
    run, marker = launch_sleeper(home)
    try:
        for i in range(8):
            runs.kill(run)
            pair = (cli("resume", run.id), cli("kill", run.id))
            finish(*(pair if i % 2 else reversed(pair)))
            alive, state = sleepers(marker), protocol.run_status(run)
            # Either the kill came first (the resumed run lives) or last (nothing lives): never between.
            assert (len(alive), state) in ((1, "running"), (0, "killed")), (alive, state)
    finally:
        runs.kill(run)


def test_stop_racing_a_launch_leaves_nothing_running(home: Path) -> None:
    found: list[str] = []

    def stop_as_soon_as_listed() -> None:
        deadline = time.monotonic() + 20
        while not found and time.monotonic() < deadline:
            listed = protocol.list_runs(home)
            if listed:
                found.append(listed[0].id)
                runs.stop(listed[0], grace=5)

    stopper = threading.Thread(target=stop_as_soon_as_listed)
    stopper.start()
    run, marker = launch_sleeper(home)
    stopper.join(30)
    assert found == [run.id]
    assert sleepers(marker) == [] and protocol.run_status(run) in ("lost", "killed")


@pytest.mark.slow
def test_a_stop_at_any_moment_of_a_resume_ends_stopped(home: Path) -> None:
    """A stop that lands while the resumed trainer is still starting (before Python has run a line of
    ours, while it imports torch, while it restores) ends the run `stopped`, never `lost`."""
    config = protocol.defaults()
    config["data"]["name"], config["train"]["epochs"] = "digits", 500
    run = runs.launch(config, name="race", root=protocol.home())
    deadline = time.monotonic() + 120
    while not run.last_ckpt.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert runs.stop(run) == "stopped"
    for delay in (0.0, 0.02, 0.2, 1.0):  # before a line of ours runs, importing torch, restoring
        runs.resume(run)
        time.sleep(delay)
        assert runs.stop(run, grace=60) == "stopped", (delay, run.stderr.read_text()[-2000:])
        assert protocol.tail(run.events)[-1]["type"] == "stopped"
