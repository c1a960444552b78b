"""The one status rule, process identity without psutil, and the per-run lock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from trainconsole import protocol
from trainconsole.protocol import (
    EventWriter,
    RunDir,
    derive_status,
    last_final,
    process_alive,
    run_status,
)

T0 = 1_800_000_000.0


class TestDeriveStatus:
    def test_a_final_event_decides_unless_the_run_was_launched_again(self) -> None:
        assert derive_status("finished", T0 + 5, T0, alive=False) == "finished"
        assert derive_status("stopped", T0 + 5, T0, alive=True) == "stopped"  # exiting after `stopped`
        assert derive_status("stopped", T0 + 5, T0 + 9, alive=True) == "running"  # resumed
        assert derive_status("stopped", T0 + 5, T0 + 9, alive=None) == "running"  # resumed, not checked yet
        assert derive_status("stopped", T0 + 5, T0 + 9, alive=False) == "lost"  # resumed, then vanished

    def test_without_a_final_event_liveness_decides(self) -> None:
        assert derive_status(None, 0.0, T0, alive=True) == "running"
        assert derive_status(None, 0.0, T0, alive=None) == "running"
        assert derive_status(None, 0.0, T0, alive=False) == "lost"

    def test_queued_runs(self) -> None:
        assert derive_status(None, 0.0, T0, alive=True, queued=True) == "queued"
        assert derive_status(None, 0.0, T0, alive=False, queued=True) == "lost"
        assert derive_status("killed", T0 + 1, T0, alive=False, queued=True) == "killed"

    def test_last_final_looks_no_further_back_than_the_last_started(self) -> None:
        events = [{"type": "stopped", "t": T0}, {"type": "started", "t": T0 + 2},
                  {"type": "step", "t": T0 + 3}]
        assert last_final(events) == (None, 0.0)
        assert last_final([*events, {"type": "finished", "t": T0 + 4}]) == ("finished", T0 + 4)


class TestProcessAlive:
    def test_pid_and_start_time_must_both_match(self) -> None:
        me = psutil.Process(os.getpid())
        assert process_alive(me.pid, me.create_time())
        assert not process_alive(me.pid, me.create_time() + 1.0)  # a reused pid is a stranger
        assert not process_alive(None, me.create_time()) and not process_alive(me.pid, None)

    def test_a_zombie_is_gone(self) -> None:
        child = subprocess.Popen([sys.executable, "-c", "pass"])
        started = psutil.Process(child.pid).create_time()
        deadline = time.monotonic() + 10
        while psutil.Process(child.pid).status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not process_alive(child.pid, started)
        child.wait()
        assert not process_alive(child.pid, started)


def test_run_status_reads_events_and_run_json(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    run = RunDir.create(tmp_path, "r1")
    me, launched = psutil.Process(os.getpid()), time.time() - 60
    run.write_info({"id": "r1", "pid": me.pid, "pid_started": me.create_time(), "started_at": launched})
    writer = EventWriter(run.events, run.id)
    writer.emit("started")
    assert run_status(run) == "running"
    run.write_info({"id": "r1", "pid": me.pid, "pid_started": me.create_time() + 5, "started_at": launched})
    assert run_status(run) == "lost"
    writer.emit("finished")
    assert run_status(run) == "finished"
    # resumed: launched after the final event, before its own `started` is written
    resumed = {"id": "r1", "pid": me.pid, "pid_started": me.create_time(), "started_at": time.time() + 1}
    run.write_info(resumed)
    assert run_status(run) == "running"
    run.write_info({**resumed, "pid_started": me.create_time() + 5})  # the resumed process vanished
    assert run_status(run) == "lost"


def test_the_run_lock_excludes_a_second_holder(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    run = RunDir.create(tmp_path, "r1")
    order: list[str] = []

    def second() -> None:
        with run.lock():
            order.append("second")

    with run.lock():
        other = threading.Thread(target=second)
        other.start()
        time.sleep(0.3)
        order.append("first released")
    other.join(5)
    assert order == ["first released", "second"]


@pytest.mark.parametrize("module", ["trainconsole.protocol"])
def test_protocol_stays_stdlib_only(module: str) -> None:
    heavy = "('torch', 'psutil', 'textual')"
    code = f"import sys, {module}; print(sorted(m for m in {heavy} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_trial_stop_request_is_a_file_the_driver_can_list(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    run = RunDir.create(tmp_path, "t1")
    assert protocol.trial_stops_requested(run.path) == set()
    protocol.request_trial_stop(run, "abc_00003")
    assert protocol.trial_stops_requested(run.path) == {"abc_00003"}
    with pytest.raises(ValueError, match="trial_id"):
        protocol.request_trial_stop(run, "../escape")


def test_a_dequeued_run_is_running_however_long_its_log(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    run = RunDir.create(tmp_path, "r1")
    me = psutil.Process(os.getpid())
    info = {"id": "r1", "pid": me.pid, "pid_started": me.create_time(), "started_at": time.time() - 60,
            "queued": True}
    run.write_info(info)
    writer = EventWriter(run.events, run.id)
    writer.emit("queued", min_free_mb=100)
    assert run_status(run) == "queued" and protocol.in_queue(info)
    run.write_info({**info, "dequeued_at": time.time()})
    writer.emit("started")
    for step in range(2000):  # the `started` event falls out of any tail window
        writer.emit("step", step=step, loss=0.5, samples_per_s=1000.0)
    writer.close()
    assert run.events.stat().st_size > 2 * 65536
    assert run_status(run) == "running" and not protocol.in_queue(run.read_info())


@pytest.mark.parametrize(("before_s", "status"), [(1.0, "queued"), (0.005, "running")])
def test_a_started_from_before_the_launch_leaves_a_queued_run_queued_in_ls_and_the_console(
        tmp_path: Path, before_s: float, status: str) -> None:
    """A queued run's log may hold a `started` of its previous launch (a resumed run waits again): it
    says nothing of this launch, unless it is within the launch's slack of run.json's start."""
    from trainconsole.console.core.run_state import RunState

    (tmp_path / "runs").mkdir()
    run = RunDir.create(tmp_path, "r1")
    me, launched = psutil.Process(os.getpid()), time.time() - 60
    info = {"id": "r1", "pid": me.pid, "pid_started": me.create_time(), "started_at": launched,
            "queued": True}
    run.write_info(info)
    started = {"v": 1, "t": launched - before_s, "run": "r1", "type": "started"}
    run.events.write_text(json.dumps(started) + "\n")
    state = RunState("r1")
    state.set_info(info)
    state.apply(started)
    state.alive = True
    assert run_status(run) == state.status == status
