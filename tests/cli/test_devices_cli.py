"""`trainconsole devices [--json] [--publish]` on one host: every host's snapshot in the home (written here
as other hosts would, with the simulated NVML), this host first, stale hosts marked; and the publisher for
an idle host, one per host, ended by a signal."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from host_helpers import EXE, cli
from processes import wait_for

from trainconsole.protocol import host_devices, nvml
from trainconsole.protocol.places import host as hosts

GIB_MIB = 1024


@pytest.fixture(autouse=True)
def silence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAINCONSOLE_HEARTBEAT_SILENCE_S", "30")


def other_host(home: Path, host: str, gpus: int, runs: dict[str, str], age: float = 0.0) -> None:
    """What a host with `gpus` simulated GPUs and these runs publishes (`age` seconds ago)."""
    reading = nvml.simulated(gpus, runs)
    snap = host_devices.HostSnapshot(host, time.time() - age, reading.gpus, nvml.Host(20 << 30, 64 << 30),
                                     reading.note, dict(runs))
    host_devices.write(home, snap)


def test_devices_json_lists_every_host_this_one_first_in_gpustats_shape(home: Path) -> None:
    other_host(home, "gpu-box-b", 2, {"20240305-121500-resnet-b1": "resnet"})
    other_host(home, "gpu-box-a", 1, {"20240305-121500-cnn-a1": "cnn", "20240305-121501-vit-a2": "vit"})
    other_host(home, "gpu-box-old", 4, {}, age=120)
    out = cli("devices", "--json")
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    assert [h["hostname"] for h in found] == [hosts.this_host(), "gpu-box-a", "gpu-box-b", "gpu-box-old"]
    assert [h["this_host"] for h in found] == [True, False, False, False]
    assert [h["stale"] for h in found] == [False, False, False, True] and found[3]["age_s"] >= 119
    a, b = found[1], found[2]
    assert [len(h["gpus"]) for h in (a, b)] == [1, 2]
    gpu = b["gpus"][1]
    assert set(gpu) >= {"index", "name", "memory.used", "memory.total", "utilization.gpu", "temperature.gpu",
                        "power.draw", "processes"}
    assert (gpu["index"], gpu["memory.total"], gpu["utilization.gpu"]) == (1, 80 * GIB_MIB, 55)
    assert gpu["processes"] == [{"pid": None, "run": "20240305-121500-resnet-b1", "name": "resnet",
                                 "gpu_memory_usage": 6 * GIB_MIB}]
    assert [(r["name"], r["gpu_memory_usage"]) for r in a["runs"]] == [("cnn", 3 * GIB_MIB),
                                                                       ("vit", 6 * GIB_MIB)]
    assert (a["memory.free"], a["memory.total"]) == (44 * GIB_MIB, 64 * GIB_MIB)
    text = cli("devices")
    assert text.returncode == 0
    assert re.search(r"^gpu-box-a  \d+s ago  memory 44G free of 64G$", text.stdout, re.M)
    assert re.search(r"^gpu-box-old  1\d\ds ago \(stale", text.stdout, re.M)
    assert "\n    vit  6G\n" in text.stdout  # GPU0 of gpu-box-a: vit's share


def test_publish_keeps_an_idle_hosts_snapshot_fresh_one_publisher_at_a_time(home: Path) -> None:
    snap = host_devices.path(home, hosts.this_host())
    host_devices.watch(home)  # a console looks: every 2 s (else every 10 s)
    first = subprocess.Popen([EXE, "devices", "--publish"], stderr=subprocess.PIPE, text=True)
    second = subprocess.Popen([EXE, "devices", "--publish"], stderr=subprocess.DEVNULL)
    try:
        assert first.stderr is not None and "publishing this host's devices" in first.stderr.readline()
        t0 = wait_for(lambda: (s := host_devices.read(snap)) and s.t, 30, "a first snapshot")
        wait_for(lambda: (s := host_devices.read(snap)) and s.t > t0 + 1, 10, "a second snapshot")
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=10) == 0
        ended = time.time()
        wait_for(lambda: (s := host_devices.read(snap)) and s.t > ended, 10,
                 "the other publisher to take over")
    finally:
        for proc in (first, second):
            proc.kill()
            proc.wait()
    found = json.loads(cli("devices", "--json").stdout)
    assert found[0]["hostname"] == hosts.this_host() and found[0]["memory.total"] > 0
