"""A host's device snapshot in the home: its file, its one writer per host, and whose each share is."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from trainconsole.protocol import device_publish, host_devices, nvml
from trainconsole.protocol.host_devices import HostSnapshot
from trainconsole.protocol.nvml import GIB, Gpu, GpuProc, Host


def me() -> tuple[int, float]:
    proc = psutil.Process()
    return proc.pid, proc.create_time()


def test_a_snapshot_reads_back_as_written_and_garbage_reads_as_none(tmp_path: Path) -> None:
    gpu = Gpu(1, "NVIDIA H100", 30 * GIB, 80 * GIB, 71, (("run-a", 20 * GIB),), 64, 312.5,
              (GpuProc(4242, "run-a", 20 * GIB), GpuProc(77, None, 9 * GIB)))
    snap = HostSnapshot("box/2", 1000.0, (gpu,), Host(10 * GIB, 64 * GIB), "", {"run-a": "resnet"})
    host_devices.write(tmp_path, snap)
    assert host_devices.path(tmp_path, "box/2").name == "box_2.json"
    assert host_devices.read(host_devices.path(tmp_path, "box/2")) == snap
    assert [p.name for p in (tmp_path / "devices").iterdir()] == ["box_2.json"]  # no temp file left
    assert snap.free() == [("gpu1", 50 * GIB)]
    (tmp_path / "devices" / "bad.json").write_text('{"v": 1, "host": "x", "t": ')
    (tmp_path / "devices" / "old.json").write_text('{"v": 0, "host": "y", "t": 1}')
    assert host_devices.read(tmp_path / "devices" / "bad.json") is None
    assert [s.host for s in host_devices.read_all(tmp_path, 1001.0, "other")] == ["box/2"]


def test_this_host_comes_first_a_silent_one_is_stale_and_a_long_silent_one_left_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAINCONSOLE_HEARTBEAT_SILENCE_S", "30")
    for host, t in (("alpha", 990.0), ("zulu", 1000.0), ("gone", 1000.0 - host_devices.FORGET_S - 1)):
        host_devices.write(tmp_path, HostSnapshot(host, t, memory=Host(1, 2)))
    found = host_devices.read_all(tmp_path, 1000.0, "zulu")
    assert [s.host for s in found] == ["zulu", "alpha"]
    assert [s.stale(1000.0) for s in found] == [False, False]
    assert found[1].stale(1021.0) and found[1].age(1021.0) == 31.0


def test_one_writer_per_host_and_the_next_takes_over_when_it_ends(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(device_publish.ENV_SIMULATED, "2")
    first, second = (device_publish.Publisher(tmp_path, "box", every_s=0.01) for _ in range(2))
    assert first.tick() and first.holds
    time.sleep(0.02)
    assert not second.tick() and not second.holds  # the lock is the first's
    first.close()
    time.sleep(0.02)
    assert second.tick() and second.holds
    second.close()


def test_a_host_publishes_every_2_s_only_while_a_console_looks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(device_publish.ENV_SIMULATED, "1")
    monkeypatch.setenv("TRAINCONSOLE_HEARTBEAT_SILENCE_S", "300")
    assert host_devices.idle_s() == host_devices.IDLE_S
    publisher = device_publish.Publisher(tmp_path, "box", every_s=0.01)
    assert publisher.tick()  # the first at once
    time.sleep(0.02)
    assert not publisher.tick()  # no console looks: not before idle_s()
    host_devices.watch(tmp_path)
    assert host_devices.watched(tmp_path, time.time())
    assert publisher.tick()
    time.sleep(0.02)
    assert publisher.tick()
    assert not host_devices.watched(tmp_path, time.time() + host_devices.WATCHED_S + 1)
    publisher.close()
    monkeypatch.setenv("TRAINCONSOLE_HEARTBEAT_SILENCE_S", "9")
    assert host_devices.idle_s() == 3.0  # a short silence: often enough never to look stale


def test_a_snapshot_names_each_runs_share_and_forgets_a_dead_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(device_publish.ENV_SIMULATED, "3")
    pid, started = me()
    device_publish.register(tmp_path, "box", "run-a", pid, started, "digits")
    device_publish.register(tmp_path, "box", "run-dead", 2**22 + 5, 1.0, "gone")
    publisher = device_publish.Publisher(tmp_path, "box")
    assert publisher.tick()
    publisher.close()
    snap = host_devices.read(host_devices.path(tmp_path, "box"))
    assert snap is not None and snap.host == "box" and len(snap.gpus) == 3
    assert snap.names == {"run-a": "digits"}
    assert [g.by_run for g in snap.gpus] == [(("run-a", 3 * GIB),), (("run-a", 6 * GIB),),
                                             (("run-a", 9 * GIB),)]
    assert sorted(os.listdir(device_publish.runs_folder(tmp_path, "box"))) == ["run-a"]
    device_publish.unregister(tmp_path, "box", "run-a")
    assert device_publish.registered(tmp_path, "box") == {}


def test_without_a_gpu_each_runs_rss_holds_its_childrens(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(device_publish.ENV_SIMULATED, "x")  # not a count: the real reader
    hold = "import time; x = b'x' * (64 << 20); print(1, flush=True); time.sleep(30)"
    child = subprocess.Popen([sys.executable, "-c", hold], stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline()
        device_publish.register(tmp_path, "box", "run-a", *me())
        publisher = device_publish.Publisher(tmp_path, "box")
        if publisher.reader.available:
            pytest.skip("this machine has an NVIDIA GPU")
        snap = publisher.snapshot()
        assert snap.note == nvml.NO_GPU and snap.memory is not None
        (run, rss), = snap.memory.by_run
        assert run == "run-a" and rss > 64 << 20  # this process and its child
    finally:
        child.kill()
        child.wait()


def test_a_gpu_process_belongs_to_the_run_among_its_parents() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        pid, _ = me()
        owners = device_publish.Owners({pid: "run-a"}, {})
        assert owners.get(child.pid) == "run-a" and owners.get(pid) == "run-a"
        assert owners.get(1) is None and owners.get(os.getppid(), "other") == "other"
    finally:
        child.kill()
        child.wait()


def test_another_node_of_a_slurm_run_publishes_its_host_into_the_runs_home_as_the_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from trainconsole.protocol import RunDir
    from trainconsole.protocol.places import host as hosts
    from trainconsole.trainers.lifecycle.watchdog import Watchdog

    monkeypatch.setenv(device_publish.ENV_SIMULATED, "2")
    (tmp_path / "runs").mkdir()
    run = RunDir.create(tmp_path, "r1")
    run.write_info({"id": "r1", "name": "digits"})
    node = RunDir(run.path / "nodes" / "1")  # as trainers/slurm_nodes.place makes it for node rank 1
    node.path.mkdir(parents=True)
    node.write_info({"id": "r1-node1", "kind": "train", "node_of": "r1", "node_rank": 1})
    dog = Watchdog.start(node)
    try:
        host = hosts.this_host()
        assert device_publish.registered(tmp_path, host).keys() == {"r1"}
        deadline = time.monotonic() + 10
        while host_devices.read(host_devices.path(tmp_path, host)) is None and time.monotonic() < deadline:
            time.sleep(0.1)
        snap = host_devices.read(host_devices.path(tmp_path, host))
        assert snap is not None and snap.names == {"r1": "digits"}
    finally:
        dog.close()
    assert device_publish.registered(tmp_path, host) == {}
