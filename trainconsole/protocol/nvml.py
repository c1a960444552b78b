"""What a host's devices hold, read through NVML (or host memory where there is no NVIDIA GPU).

The one NVML layer of the package: the console's device sampler (`console/services/gpu.py`) and a host's
device snapshot (`device_publish.py`, in every run's watchdog) both read through `Nvml`. It knows no UI
and returns plain frozen shapes. nvidia-ml-py and psutil are imported on first use, so that importing the
protocol stays light; a simulated NVML (`simulated`, the tests' hardware edge) stands in where asked.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

NO_GPU = "no NVIDIA GPU found: showing host memory and each run's RSS"
GIB = 1 << 30
PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@dataclass(frozen=True)
class GpuProc:
    """One process on a GPU: its pid, the run of this home it belongs to (None: another's), its memory."""

    pid: int
    run: str | None
    used: int


@dataclass(frozen=True)
class Gpu:
    """One GPU: memory used and total (bytes), utilisation (%), and the share of each run; temperature
    (degrees C), power (W) and its processes where a snapshot of the host records them."""

    index: int
    name: str
    used: int
    total: int
    util: int | None
    by_run: tuple[tuple[str, int], ...] = ()
    temp: int | None = None
    power: float | None = None
    procs: tuple[GpuProc, ...] = ()


@dataclass(frozen=True)
class Host:
    """Host memory (bytes) and each run's resident set size."""

    used: int
    total: int
    by_run: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class Reading:
    """One reading of a host's devices: its GPUs, or its memory with a one-line note saying why."""

    gpus: tuple[Gpu, ...] = ()
    host: Host | None = None
    note: str = ""


def host_reading(families: Mapping[str, Iterable[int]], note: str = NO_GPU) -> Reading:
    """Host memory and the summed RSS of each run's processes."""
    memory = host_memory()
    by_run = tuple((rid, sum(_rss(pid) for pid in pids)) for rid, pids in sorted(families.items()))
    return Reading(host=Host(memory.used, memory.total, by_run), note=note)


def host_memory() -> Host:
    """This host's memory in use and in all: one read of /proc/meminfo (psutil where there is none)."""
    try:
        with open("/proc/meminfo", "rb") as f:
            fields = dict(line.split(b":", 1) for line in f.read().splitlines() if b":" in line)
        total, available = (int(fields[k].split()[0]) << 10 for k in (b"MemTotal", b"MemAvailable"))
        return Host(total - available, total)
    except (OSError, KeyError, ValueError):
        import psutil

        vm = psutil.virtual_memory()
        return Host(vm.total - vm.available, vm.total)


def _rss(pid: int) -> int:
    """A process's resident set size: one read of /proc/PID/statm (psutil where there is no /proc)."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * PAGE
    except FileNotFoundError:
        if os.path.isdir("/proc/self"):
            return 0  # gone
    except (OSError, ValueError, IndexError):
        return 0
    import psutil

    try:
        return psutil.Process(pid).memory_info().rss
    except psutil.Error:
        return 0


class Nvml:
    """GPUs through NVML (nvidia-ml-py); host memory when NVML is not there (`note` says why)."""

    def __init__(self) -> None:
        self._nvml: Any = None
        self.note = ""

    @property
    def available(self) -> bool:
        """Whether NVML answers here (initialised on first ask)."""
        if self._nvml is None:
            self._nvml = self._init()
        return self._nvml is not False

    def read(self, owner: Mapping[int, str], families: Mapping[str, Iterable[int]],
             details: bool = False) -> Reading:
        """Every GPU with each run's share (`owner`: pid -> run id), or the host's memory by run. With
        `details`, also temperature, power and every process (a snapshot of the host wants them)."""
        if not self.available:
            return host_reading(families, self.note)
        nv = self._nvml
        try:
            count = nv.nvmlDeviceGetCount()
            return Reading(gpus=tuple(self._gpu(i, owner, details) for i in range(count)))
        except nv.NVMLError as e:
            return host_reading(families, f"NVML failed ({e}): showing host memory")

    def _init(self) -> Any:
        try:
            import pynvml

            pynvml.nvmlInit()
            return pynvml
        except ImportError:
            self.note = NO_GPU + " (nvidia-ml-py is not installed)"
        except Exception as e:  # pynvml.NVMLError_LibraryNotFound, driver errors
            lib_missing = type(e).__name__ in ("NVMLError_LibraryNotFound", "NVMLError_DriverNotLoaded")
            self.note = NO_GPU if lib_missing else f"NVML unavailable ({e}): showing host memory"
        return False

    def _gpu(self, index: int, owner: Mapping[int, str], details: bool) -> Gpu:
        nv = self._nvml
        handle = nv.nvmlDeviceGetHandleByIndex(index)
        name = nv.nvmlDeviceGetName(handle)
        mem = nv.nvmlDeviceGetMemoryInfo(handle)
        util = _optional(nv, lambda: nv.nvmlDeviceGetUtilizationRates(handle).gpu)
        by_run: dict[str, int] = {}
        procs = []
        for proc in gpu_processes(nv, handle):
            run_id = owner.get(proc.pid)
            procs.append(GpuProc(int(proc.pid), run_id, int(proc.usedGpuMemory or 0)))
            if run_id is not None:
                by_run[run_id] = by_run.get(run_id, 0) + (proc.usedGpuMemory or 0)
        name = name.decode() if isinstance(name, bytes) else str(name)
        gpu = Gpu(index, name, int(mem.used), int(mem.total), util, tuple(sorted(by_run.items())))
        if not details:
            return gpu
        temp = _optional(nv, lambda: nv.nvmlDeviceGetTemperature(handle, nv.NVML_TEMPERATURE_GPU))
        power = _optional(nv, lambda: nv.nvmlDeviceGetPowerUsage(handle) / 1000.0)  # (milliwatts)
        return Gpu(gpu.index, name, gpu.used, gpu.total, util, gpu.by_run, temp, power, tuple(procs))


def _optional(nv: Any, query: Any) -> Any:
    """A figure some GPUs do not report (None then)."""
    try:
        return query()
    except (nv.NVMLError, AttributeError):
        return None


def gpu_processes(nv: Any, handle: Any) -> list[Any]:
    """The compute and graphics processes NVML lists on a GPU."""
    procs: list[Any] = []
    for query in (nv.nvmlDeviceGetComputeRunningProcesses, nv.nvmlDeviceGetGraphicsRunningProcesses):
        try:
            procs += query(handle)
        except nv.NVMLError:
            continue
    return procs


def simulated(count: int, runs: Iterable[str], total: int = 80 * GIB) -> Reading:
    """A simulated NVML's reading (tests and screenshots): `count` GPUs each split between `runs`, or
    the host (count=0); the same figures every time for the same runs."""
    runs = tuple(runs)
    if count == 0:
        by_run = tuple((rid, (k + 1) * 512 << 20) for k, rid in enumerate(runs))
        return Reading(host=Host(6 * GIB, 16 * GIB, by_run), note=NO_GPU)
    gpus = []
    for i in range(count):
        by_run = tuple((rid, (k + 1 + i) * 3 * GIB) for k, rid in enumerate(runs))
        used = sum(n for _, n in by_run) + GIB
        gpus.append(Gpu(i, "Simulated H100", used, total, 35 + 20 * i, by_run))
    return Reading(gpus=tuple(gpus))
