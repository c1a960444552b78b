"""The watchdog of a run's top process, on this host alone (so it holds where no second host can be
made): it beats while the run lives and says when it ended, and it obeys the stop and kill requests that
another host would write, whatever the run's main thread is doing."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from host_helpers import cli, events, marked, sleeper_script
from processes import wait_for

from trainconsole import protocol
from trainconsole.protocol import RunDir, heartbeat, run_requests, run_status


@pytest.fixture(autouse=True)
def quick_heartbeat(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAINCONSOLE_HEARTBEAT_S", "0.3")


def start_sleeper(tmp_path: Path) -> tuple[RunDir, str]:
    script, marker = sleeper_script(tmp_path)
    out = cli("run", "--script", str(script), "--", marker)
    assert out.returncode == 0, out.stderr
    run = RunDir(protocol.home() / "runs" / out.stdout.split()[0])
    wait_for(lambda: len(marked(marker)) == 2, 60, "the script and its child")
    return run, marker


def test_a_kill_request_ends_the_whole_tree_and_records_killed(home: Path, tmp_path: Path) -> None:
    run, marker = start_sleeper(tmp_path)
    first = heartbeat.read(run.path)
    assert first is not None
    beat = wait_for(lambda: (b := heartbeat.read(run.path)) is not None and b.t > first.t + 0.5 and b, 10,
                    "beats")
    info = run.read_info()
    assert (beat.pid, beat.ended) == (info["pid"], False)

    run_requests.request(run.path, "kill", info, "elsewhere")
    asked = time.monotonic()
    wait_for(lambda: run_status(run) == "killed", 10, "killed")
    wait_for(lambda: marked(marker) == [], 5, "no process of the run left")
    assert time.monotonic() - asked < 6
    last = events(home, run.id)[-1]
    assert last["type"] == "killed" and last["requested"] is True and info["pid"] in last["pids"]
    assert run.read_info()["ended_at"] is not None
    assert not (run.path / run_requests.FOLDER / "kill").exists()


def test_a_stop_request_is_the_runs_own_stop_and_its_last_beat_says_ended(home: Path, tmp_path: Path) -> None:
    run, marker = start_sleeper(tmp_path)
    run_requests.request(run.path, "stop", run.read_info(), "elsewhere")
    wait_for(lambda: run_status(run) == "stopped", 15, "stopped")
    wait_for(lambda: marked(marker) == [], 5, "no process of the run left")
    assert [e["type"] for e in events(home, run.id)][-1] == "stopped"
    wait_for(lambda: (heartbeat.read(run.path) or heartbeat.Beat("", 0, 0, 0)).ended, 5, "the last beat")


def test_a_request_for_an_earlier_process_of_the_run_is_not_obeyed(home: Path, tmp_path: Path) -> None:
    run, marker = start_sleeper(tmp_path)
    info = run.read_info()
    run_requests.request(run.path, "kill", {**info, "pid_started": info["pid_started"] - 100}, "elsewhere")
    wait_for(lambda: not (run.path / run_requests.FOLDER / "kill").exists(), 5, "the stale request removed")
    assert run_status(run) == "running" and len(marked(marker)) == 2
    assert cli("kill", run.id).returncode == 0
