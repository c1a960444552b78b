"""Queued runs: they wait for free device memory, start one after the other, and `kill` removes one.

The device is the only fake: TRAINCONSOLE_FREE_MB_FILE holds its free MB. Each script takes the memory
while it runs (writes 0) and gives it back as it ends, as a real training process would.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from processes import wait_for
from script_helpers import alive, cli, of_type, start, status, tree

SCRIPT = """
import sys, time
free = sys.argv[1]
open(free, "w").write("0")  # this run now holds the device
time.sleep(1.5)
print("loss: 0.5", flush=True)
open(free, "w").write("10000")  # and gives it back
"""


@pytest.fixture
def device(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A busy device (0 MB free); the queue waiters read its free memory from this file."""
    free = tmp_path / "free_mb"
    free.write_text("0")
    monkeypatch.setenv("TRAINCONSOLE_FREE_MB_FILE", str(free))
    monkeypatch.setenv("TRAINCONSOLE_QUEUE_POLL_S", "0.1")
    monkeypatch.setenv("TRAINCONSOLE_QUEUE_SETTLE_S", "5")  # the running script takes the device within 5 s
    return free


def queue_script(tmp_path: Path, device: Path, name: str) -> str:
    (tmp_path / "train.py").write_text(SCRIPT)
    return start("--script", "train.py", "--queue", "--min-free-mb", "1000", "--name", name, "--",
                 str(device), cwd=tmp_path)


def test_two_queued_runs_start_one_after_the_other_when_the_device_frees(
        home: Path, tmp_path: Path, device: Path) -> None:
    first = queue_script(tmp_path, device, "first")
    second = queue_script(tmp_path, device, "second")
    wait_for(lambda: of_type(home, second, "queued"), what="the second waiter")
    assert status(first) == status(second) == "queued"
    assert not of_type(home, first, "started") and not of_type(home, second, "started")
    device.write_text("10000")
    wait_for(lambda: status(first) == "finished", what="the first run to finish")
    wait_for(lambda: status(second) == "finished", what="the second run to finish")
    first_step = of_type(home, first, "step")[0]
    second_started = of_type(home, second, "started")[0]
    assert second_started["t"] > first_step["t"]  # it waited for the first run to give the device back
    assert of_type(home, first, "started")[0]["t"] < second_started["t"]


def test_killing_a_queued_run_leaves_nothing(home: Path, tmp_path: Path, device: Path) -> None:
    run_id = queue_script(tmp_path, device, "doomed")
    wait_for(lambda: of_type(home, run_id, "queued"), what="the waiter")
    waiter = tree(home, run_id)
    assert waiter and status(run_id) == "queued"
    out = cli("kill", run_id)
    assert out.returncode == 0, out.stderr
    assert alive(waiter) == [] and status(run_id) == "killed"
    device.write_text("10000")
    assert not of_type(home, run_id, "started")


def test_stopping_a_queued_run_ends_it_stopped_unstarted(home: Path, tmp_path: Path, device: Path) -> None:
    run_id = queue_script(tmp_path, device, "stopped")
    wait_for(lambda: of_type(home, run_id, "queued"), what="the waiter")
    waiter = tree(home, run_id)
    out = cli("stop", run_id, "--grace", "10")
    assert out.returncode == 0, out.stderr
    assert status(run_id) == "stopped" and alive(waiter) == []
    assert not of_type(home, run_id, "started")


LONG_LOG = """
import sys, time
for i in range(3000):  # well over the 64 KiB of log that a status read once looked at
    print(f"step {i} loss: {1 / (i + 1):.6f}", flush=True)
time.sleep(float(sys.argv[1]))
"""


def test_a_queued_run_with_a_long_log_is_running_and_the_next_starts_beside_it(
        home: Path, tmp_path: Path, device: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAINCONSOLE_QUEUE_SETTLE_S", "1")
    device.write_text("10000")  # room for both
    (tmp_path / "long.py").write_text(LONG_LOG)
    first = start("--script", "long.py", "--queue", "--min-free-mb", "1000", "--name", "long", "--", "30",
                  cwd=tmp_path)
    log = home / "runs" / first / "events.jsonl"
    wait_for(lambda: len(of_type(home, first, "step")) >= 2500, timeout=120, what="the long log")
    assert log.stat().st_size > 2 * 65536 and status(first) == "running"
    (tmp_path / "short.py").write_text(LONG_LOG.replace("range(3000)", "range(3)"))
    second = start("--script", "short.py", "--queue", "--min-free-mb", "1000", "--name", "next", "--", "0",
                   cwd=tmp_path)
    wait_for(lambda: status(second) == "finished", timeout=120, what="the second run beside the first")
    assert status(first) == "running"
    dequeued = json.loads((home / "runs" / first / "run.json").read_text())["dequeued_at"]
    assert of_type(home, second, "started")[0]["t"] >= dequeued + 1  # it let the first one settle
    assert cli("kill", first).returncode == 0
