"""A home shared by hosts: a run on another host is judged by its heartbeat, never by a pid here, and
is stopped or killed only through requests in its directory."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from trainconsole import protocol
from trainconsole.console import cli_render
from trainconsole.control import Control, Refused, runs
from trainconsole.protocol import RunDir, heartbeat, run_requests
from trainconsole.protocol.heartbeat import Beat
from trainconsole.protocol.places import host as hosts

T0 = 1_800_000_000.0
OTHER = "other-host-not-this-one"


def info(**fields: object) -> dict[str, object]:
    return {"host": OTHER, "pid": 4242, "pid_started": T0, "started_at": T0 + 0.1, "ended_at": None, **fields}


class TestHeardFrom:
    def test_a_fresh_heartbeat_of_the_recorded_process_is_alive_a_silent_one_lost(
            self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv(heartbeat.ENV_SILENCE, "30")
        beat = Beat(OTHER, 4242, T0 + 0.004, T0 + 100)
        assert hosts.heard_from(info(), beat, now=T0 + 129)
        assert not hosts.heard_from(info(), beat, now=T0 + 131)

    def test_before_its_first_beat_the_launch_counts(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv(heartbeat.ENV_SILENCE, "30")
        assert hosts.heard_from(info(), None, now=T0 + 20)
        assert not hosts.heard_from(info(), None, now=T0 + 31)

    def test_a_beat_of_another_process_or_host_says_nothing(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv(heartbeat.ENV_SILENCE, "30")
        now = T0 + 100
        strangers = (Beat(OTHER, 4243, T0, now), Beat(OTHER, 4242, T0 - 5, now), Beat("third", 4242, T0, now))
        for stranger in strangers:
            assert not hosts.heard_from(info(), stranger, now=now)
        assert hosts.heard_from(info(), Beat(OTHER, 4242, T0, now), now=now)

    def test_an_ended_process_is_gone_at_once(self) -> None:
        assert not hosts.heard_from(info(), Beat(OTHER, 4242, T0, T0 + 5, ended=True), now=T0 + 6)
        assert not hosts.heard_from(info(ended_at=T0 + 4), Beat(OTHER, 4242, T0, T0 + 5), now=T0 + 6)


@pytest.fixture
def stranger() -> psutil.Process:
    """A live process here, whose pid and start time a run on another host will claim."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield psutil.Process(proc.pid)
    proc.kill()
    proc.wait()


def remote_run(home: Path, proc: psutil.Process, started_at: float) -> RunDir:
    """A run recorded as started on another host with the same pid and start time as `proc` here."""
    run = RunDir.create(protocol.home(), protocol.new_run_id("remote"))
    run.config.write_text(protocol.dumps(protocol.defaults()))
    run.write_info({"id": run.id, "name": "remote", "kind": "train", "strategy": "single", "host": OTHER,
                    "pid": proc.pid, "pgid": proc.pid, "pid_started": proc.create_time(),
                    "started_at": started_at, "ended_at": None})
    return run


def test_a_run_of_another_host_with_a_live_pid_here_is_never_that_process(
        home: Path, stranger: psutil.Process, monkeypatch: pytest.MonkeyPatch) -> None:
    """pid, start time *and* host: the local process matching the first two keeps the run neither alive
    nor in reach of `kill`; only its heartbeat says it lives."""
    monkeypatch.setenv(heartbeat.ENV_SILENCE, "30")
    monkeypatch.setattr("trainconsole.control.places.host.KILL_WAIT_S", 0.5)
    assert hosts.this_host() == socket.gethostname() != OTHER
    run = remote_run(home, stranger, started_at=time.time() - 60)
    assert protocol.run_status(run) == "lost"  # silent for 60 s, whatever lives here under its pid
    assert runs.summary(run)["host"] == OTHER

    heartbeat.write(run.path, Beat(OTHER, stranger.pid, stranger.create_time(), time.time()))
    assert protocol.run_status(run) == "running"
    with pytest.raises(Refused, match=rf"^run {run.id} is running on {OTHER}$"):
        Control(home).resume(run)

    # kill: a request for the run's process on its host; the stranger here is not signalled
    assert runs.kill(run) == [stranger.pid]  # no one obeyed in time: the run's pid (on its host) is said
    assert stranger.is_running() and stranger.status() != psutil.STATUS_ZOMBIE
    assert run_requests.pending(run.path, stranger.pid, stranger.create_time()) == ["kill"]
    assert not any(e["type"] == "killed" for e in protocol.read_all(run.events))


def test_a_run_of_this_host_is_judged_by_its_pid_and_start_time(home: Path, stranger: psutil.Process,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(heartbeat.ENV_SILENCE, "30")
    run = remote_run(home, stranger, started_at=time.time() - 60)
    run.update_info(host=socket.gethostname())
    assert protocol.run_status(run) == "running"  # no heartbeat needed here
    run.update_info(pid_started=stranger.create_time() + 1)  # a reused pid
    here = socket.gethostname()
    heartbeat.write(run.path, Beat(here, stranger.pid, stranger.create_time() + 1, time.time()))
    assert protocol.run_status(run) == "lost"  # nor does a heartbeat keep a dead local process alive


def test_a_stale_request_is_removed_not_obeyed(tmp_path: Path) -> None:
    run_requests.request(tmp_path, "stop", {"pid": 10, "pid_started": T0}, "h")
    assert run_requests.pending(tmp_path, 10, T0 + 5) == []  # another process of the run (a resume)
    assert not (tmp_path / run_requests.FOLDER / "stop").exists()
    run_requests.request(tmp_path, "stop", {"pid": 10, "pid_started": T0}, "h")
    run_requests.request(tmp_path, "kill", {"pid": 10, "pid_started": T0}, "h")
    assert run_requests.pending(tmp_path, 10, T0 + 0.01) == ["kill", "stop"]
    with pytest.raises(ValueError):
        run_requests.request(tmp_path, "pause", {}, "h")


def test_ls_shows_a_host_column_only_for_a_home_of_several_hosts() -> None:
    rows = [{"id": "r1", "status": "running", "host": "box-a"},
            {"id": "r2", "status": "lost", "host": "box-a"}]
    assert "host" not in cli_render.table(rows).splitlines()[0].split()
    rows[1]["host"] = "box-b"
    lines = cli_render.table(rows).splitlines()
    assert lines[0].split()[-1] == "host" and [line.split()[-1] for line in lines[1:]] == ["box-a", "box-b"]
