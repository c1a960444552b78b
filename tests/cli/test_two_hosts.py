"""Two hosts, one home: a run started on a second host (a PID+UTS namespace on this machine, sharing the
file system but not the process table or the hostname) seen, refused, stopped and killed from this one.

Heartbeats come every 0.3 s here and 3 s of silence make a run `lost` (the defaults are 5 s and 30 s).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from host_helpers import OTHER, OtherHost, cli, events, marked, namespace_refusal, row, sleeper_script
from processes import wait_for

from trainconsole.protocol import RunDir, run_status
from trainconsole.protocol.places import host as hosts

DIGITS = str(Path(__file__).resolve().parents[2] / "examples" / "digits.toml")

SILENCE_S = 3.0
REFUSED = namespace_refusal()
pytestmark = pytest.mark.skipif(REFUSED is not None, reason=f"no second host: {REFUSED}")


@pytest.fixture(autouse=True)
def quick_heartbeat(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both hosts (the environment is inherited into the namespace) beat and judge quickly."""
    monkeypatch.setenv("TRAINCONSOLE_HEARTBEAT_S", "0.3")
    monkeypatch.setenv("TRAINCONSOLE_HEARTBEAT_SILENCE_S", str(SILENCE_S))


@pytest.fixture
def other_hosts() -> list[OtherHost]:
    made: list[OtherHost] = []
    yield made
    for host in made:
        host.gone()


def test_a_training_run_on_another_host_is_running_there_refuses_resume_and_stops_on_request(
        home: Path, other_hosts: list[OtherHost]) -> None:
    """The digits example started on the other host: `running` with its host from here (its pid means
    nothing here), `resume` refused with exit 2, and `stop` from here checkpoints it and ends it `stopped`
    within seconds, through the normal stop path of the trainer."""
    other = OtherHost(DIGITS, "--set", "train.epochs=500")
    other_hosts.append(other)
    assert hosts.this_host() != OTHER
    wait_for(lambda: any(e["type"] == "eval" for e in events(home, other.run_id)), 120, "a first epoch")
    first = row(other.run_id)
    assert (first["status"], first["host"]) == ("running", OTHER)

    refused = cli("resume", other.run_id)
    assert refused.returncode == 2
    assert refused.stderr.strip() == f"trainconsole: error: run {other.run_id} is running on {OTHER}"

    asked = time.monotonic()
    stopped = cli("stop", other.run_id, "--grace", "60")
    took = time.monotonic() - asked
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stdout.split() == [other.run_id, "stopped"]
    assert took < 15, took
    kinds = [e["type"] for e in events(home, other.run_id)]
    assert kinds[-1] == "stopped" and "killed" not in kinds
    assert (home / "runs" / other.run_id / "checkpoints" / "last.pt").exists()


def test_kill_from_this_host_ends_the_runs_tree_on_its_host_within_seconds(
        home: Path, tmp_path: Path, other_hosts: list[OtherHost]) -> None:
    script, marker = sleeper_script(tmp_path)
    other = OtherHost("--script", str(script), "--", marker)
    other_hosts.append(other)
    procs = wait_for(lambda: len(marked(marker)) == 2 and marked(marker), 60, "the script and its child")
    assert row(other.run_id)["status"] == "running"

    asked = time.monotonic()
    killed = cli("kill", other.run_id)
    assert killed.returncode == 0, killed.stderr
    assert killed.stdout.split() == [other.run_id, "killed"]
    assert time.monotonic() - asked < 10
    assert marked(marker) == [], [p.pid for p in procs]
    last = events(home, other.run_id)[-1]
    assert (last["type"], last["host"], last["requested"]) == ("killed", OTHER, True)
    assert row(other.run_id)["status"] == "killed"


def test_lost_only_once_its_host_is_gone_and_the_silence_has_passed(
        home: Path, tmp_path: Path, other_hosts: list[OtherHost]) -> None:
    script, marker = sleeper_script(tmp_path)
    other = OtherHost("--script", str(script), "--", marker)
    other_hosts.append(other)
    wait_for(lambda: len(marked(marker)) == 2, 60, "the script and its child")
    time.sleep(SILENCE_S + 1)  # longer than the silence: alive all along, by its heartbeat alone
    assert row(other.run_id)["status"] == "running"

    run = RunDir(home / "runs" / other.run_id)
    other.gone()
    other_hosts.remove(other)
    died = time.monotonic()
    assert run_status(run) == "running"  # silent for less than the stated silence yet
    wait_for(lambda: marked(marker) == [], 10, "every process of the other host gone")
    wait_for(lambda: run_status(run) == "lost", 30, "lost")
    assert SILENCE_S - 1 <= time.monotonic() - died <= SILENCE_S + 2
    assert row(other.run_id)["status"] == "lost"  # and so says `ls`
