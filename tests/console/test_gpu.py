"""The device samplers: NVML mapped to runs (with a stand-in NVML), and the host fallback for real."""

from __future__ import annotations

import os
import subprocess
import sys
import types

import psutil
import pytest

from trainconsole.console.services import gpu

GIB = 1 << 30


class NVMLError(Exception):
    pass


def fake_nvml(procs: dict[int, list[tuple[int, int | None]]]) -> types.ModuleType:
    """An NVML with one device per entry of `procs` ({index: [(pid, used bytes)]})."""
    nv = types.ModuleType("pynvml")
    nv.NVMLError = NVMLError
    nv.nvmlInit = lambda: None
    nv.nvmlDeviceGetCount = lambda: len(procs)
    nv.nvmlDeviceGetHandleByIndex = lambda i: i
    nv.nvmlDeviceGetName = lambda h: b"NVIDIA H100 80GB HBM3"
    nv.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(used=(h + 1) * 10 * GIB, total=80 * GIB)
    nv.nvmlDeviceGetUtilizationRates = lambda h: types.SimpleNamespace(gpu=40 + h)
    nv.nvmlDeviceGetComputeRunningProcesses = lambda h: [
        types.SimpleNamespace(pid=pid, usedGpuMemory=used) for pid, used in procs[h]]

    def no_graphics(h: int) -> list[object]:
        raise NVMLError("not supported")

    nv.nvmlDeviceGetGraphicsRunningProcesses = no_graphics
    return nv


def test_nvml_processes_are_split_by_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml({0: [(11, 2 * GIB), (12, GIB), (99, 5 * GIB)],
                                                          1: [(21, None)]}))
    snap = gpu.NvmlSampler().sample({"run-a": {11, 12}, "run-b": {21}})
    assert snap.host is None and not snap.note
    first, second = snap.gpus
    assert first.name == "NVIDIA H100 80GB HBM3" and first.util == 40 and first.total == 80 * GIB
    assert first.by_run == (("run-a", 3 * GIB),)  # pid 99 is no run's: it stays in "used", unattributed
    assert second.by_run == (("run-b", 0),)


def test_nvml_init_failure_falls_back_to_host(monkeypatch: pytest.MonkeyPatch) -> None:
    nv = fake_nvml({})

    class NVMLError_LibraryNotFound(NVMLError):  # noqa: N801 - NVML's own name
        pass

    def missing() -> None:
        raise NVMLError_LibraryNotFound("NVML Shared Library Not Found")

    nv.nvmlInit = missing
    monkeypatch.setitem(sys.modules, "pynvml", nv)
    snap = gpu.NvmlSampler().sample({})
    assert snap.gpus == () and snap.host is not None and snap.note == gpu.NO_GPU


def test_this_machine_without_gpu_shows_host_memory_by_run() -> None:
    hold = "import time; x = b'x' * (64 << 20); print(1, flush=True); time.sleep(30)"
    child = subprocess.Popen([sys.executable, "-c", hold], stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline()  # its 64 MiB are resident
        me = psutil.Process()
        fams = gpu.families({"run-a": (me.pid, me.create_time()), "stale": (me.pid, 1.0)})
        assert set(fams) == {"run-a"} and {me.pid, child.pid} <= fams["run-a"]
        snap = gpu.NvmlSampler().sample(fams)
        if snap.gpus:
            pytest.skip("this machine has an NVIDIA GPU")
        assert snap.note == gpu.NO_GPU and snap.host is not None
        (rid, rss), = snap.host.by_run
        assert rid == "run-a" and rss > me.memory_info().rss + (60 << 20)
        assert 0 < snap.host.used < snap.host.total
    finally:
        child.kill()
        child.wait()


def test_simulated_sampler_is_deterministic() -> None:
    sim = gpu.SimulatedGpus(2, runs=["a", "b"])
    assert sim.sample({}) == sim.sample({"x": {os.getpid()}})
    host = gpu.SimulatedGpus(0).sample({"a": set()})
    assert host.gpus == () and host.note == gpu.NO_GPU and host.host is not None
