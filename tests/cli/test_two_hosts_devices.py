"""Two hosts, one home, a run each: the console on this host shows the other host's devices (published by
its run's watchdog) with the run's share soon after it starts, greys that host once it falls silent and
leaves it out of where the next run fits; `devices --json` lists both hosts with their runs.

The second host is a PID+UTS namespace on this machine (as in test_two_hosts.py); each host's GPUs are the
simulated NVML (the hardware edge): 1 on the other host, 2 here.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from host_helpers import OTHER, OtherHost, cli, marked, namespace_refusal, sleeper_script
from processes import wait_for

from trainconsole.console.app import TrainConsole
from trainconsole.console.services.gpu import SimulatedGpus
from trainconsole.console.widgets.host_groups import HostGroups
from trainconsole.protocol import device_publish
from trainconsole.protocol.places import host as hosts

SILENCE_S = 4.0
SEEN_S = 5.0  # the bound: a change on the other host shows here within this
REFUSED = namespace_refusal()
pytestmark = pytest.mark.skipif(REFUSED is not None, reason=f"no second host: {REFUSED}")


@pytest.fixture(autouse=True)
def quick_heartbeat(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAINCONSOLE_HEARTBEAT_S", "0.3")
    monkeypatch.setenv("TRAINCONSOLE_HEARTBEAT_SILENCE_S", str(SILENCE_S))


async def until(pilot: Any, predicate: Any, timeout: float, what: str) -> Any:
    """Let the console run until `predicate()` holds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        await pilot.pause(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def share(groups: HostGroups, host: str, run_id: str) -> int:
    """The run's bytes on the host's GPUs, as the pane holds them (0: not shown)."""
    return sum(n for s in groups.others if s.host == host for g in s.gpus for r, n in g.by_run if r == run_id)


async def test_the_console_shows_both_hosts_devices_and_greys_the_silent_one(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script, marker = sleeper_script(tmp_path)
    monkeypatch.setenv(device_publish.ENV_SIMULATED, "2")
    mine = cli("run", "--script", str(script), "--", marker)
    assert mine.returncode == 0, mine.stderr
    here_id = mine.stdout.split()[0]
    other: OtherHost | None = None
    app = TrainConsole(home=home, sampler=SimulatedGpus(2))
    try:
        async with app.run_test(size=(160, 50)) as pilot:
            await until(pilot, lambda: app.dashboard and app.devices is not None, 30, "the dashboard")
            groups = app.main.query_one(HostGroups)
            monkeypatch.setenv(device_publish.ENV_SIMULATED, "1")  # (the namespace inherits it)
            other = await asyncio.to_thread(OtherHost, "--script", str(script), "--", marker)
            started = time.monotonic()
            await until(pilot, lambda: share(groups, OTHER, other.run_id), SEEN_S, "the other run's share")
            print(f"the other host's run seen after {time.monotonic() - started:.1f} s")
            snap, = groups.others
            assert (snap.host, len(snap.gpus), snap.stale(time.time())) == (OTHER, 1, False)
            assert OTHER in groups.render().plain.split("\n")[3]  # where the next run fits

            found = json.loads((await asyncio.to_thread(cli, "devices", "--json")).stdout)
            assert [h["hostname"] for h in found] == [hosts.this_host(), OTHER]
            assert [len(h["gpus"]) for h in found] == [2, 1]
            runs = [[p["run"] for p in h["gpus"][0]["processes"]] for h in found]
            assert runs == [[here_id], [other.run_id]]

            other.gone()
            # greyed by the pane's own clock (its `now`, set when it last sampled), as it draws
            await until(pilot, lambda: groups.others and groups.others[0].stale(groups.now), SILENCE_S + 5,
                        "the other host greyed")
            await pilot.pause(0.6)  # (the next frame)
            lines = groups.render().plain.split("\n")
            assert lines[2].split()[0] == hosts.this_host() and not any(
                line.startswith(f"  {OTHER}") for line in lines)  # gone from where the next run fits
            assert any(line.startswith(f"▸ {OTHER}") and "silent" in line for line in lines)
    finally:
        if other is not None and other.proc.poll() is None:
            other.gone()
        assert cli("kill", here_id).returncode == 0
        wait_for(lambda: marked(marker) == [], 10, "no sleeper left")
