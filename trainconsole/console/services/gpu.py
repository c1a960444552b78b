"""Device memory, sampled for the devices pane: NVML per GPU, or host memory where there is no GPU.

Samplers know nothing of the UI: `sample(families)` takes each run's process ids and returns a plain,
frozen `Devices` snapshot. The app calls it from a thread worker at <= 2 Hz, never on the event loop.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import psutil

from trainconsole.trainers.protocol import processes

NO_GPU = "no NVIDIA GPU found: showing host memory and each run's RSS"
GIB = 1 << 30
#: Seconds between two sums of what the home holds (its runs' folders, its trash).
USAGE_S = 30.0


@dataclass(frozen=True)
class Gpu:
    """One GPU: memory used and total (bytes), utilisation (%), and the share of each run."""

    index: int
    name: str
    used: int
    total: int
    util: int | None
    by_run: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class Host:
    """Host memory (bytes) and each run's resident set size."""

    used: int
    total: int
    by_run: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class Disk:
    """The runs home's filesystem: free and total bytes, and the largest last checkpoint (what the next
    checkpoint of such a run needs)."""

    path: str
    free: int
    total: int
    needed: int = 0
    home_bytes: int | None = None  # what the home's runs and trash hold on disk (None: not summed)

    @property
    def low(self) -> bool:
        """Less free than the next checkpoint needs."""
        return self.free < self.needed


@dataclass(frozen=True)
class Devices:
    """One sample of every device: GPUs, or the host with a one-line note saying why; and the disk."""

    gpus: tuple[Gpu, ...] = ()
    host: Host | None = None
    note: str = ""
    disk: Disk | None = None


class HomeUsage:
    """The home's bytes on disk and its runs' largest last.pt, summed again every USAGE_S (every run's
    folder: a few `stat`s where the run index's figure still holds, a walk where not), and the live
    runs' own last.pt at every sample (they are the ones writing checkpoints)."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.total: int | None = None
        self._largest, self._summed_at = 0, -USAGE_S

    def sample(self, live: Iterable[str]) -> tuple[int | None, int]:
        """(the home's bytes, the largest last.pt now)."""
        if time.monotonic() - self._summed_at >= USAGE_S:
            self._summed_at = time.monotonic()
            self.total, self._largest = self._sum()
        return self.total, max([self._largest, *(_last_size(self.home / "runs" / run_id) for run_id in live)])

    def _sum(self) -> tuple[int, int]:
        from trainconsole.trainers.protocol import index  # (the sampler's thread, after the first frame)

        summaries = index.load(self.home)
        total = largest = 0
        try:
            entries = [e for e in os.scandir(self.home / "runs") if e.is_dir()]
        except OSError:
            entries = []
        for entry in entries:
            largest = max(largest, _last_size(Path(entry.path)))
            summary = summaries.get(entry.name)
            if summary is not None and summary.key == index.fingerprint(entry.path):
                total += int(summary.row.get("size") or 0)
            else:
                total += index.disk_size(Path(entry.path))
        return total + index.disk_size(self.home / "trash"), largest


def _last_size(run: Path) -> int:
    try:
        return (run / "checkpoints" / "last.pt").stat().st_size
    except OSError:
        return 0


def disk_snapshot(home: Path, usage: HomeUsage | None = None, live: Iterable[str] = ()) -> Disk | None:
    """Free space of the filesystem holding `home`, the size of its runs' largest last.pt, and what the
    home holds."""
    try:
        stat = os.statvfs(home)
    except OSError:
        return None
    home_bytes, needed = (usage or HomeUsage(home)).sample(live)
    return Disk(str(home), stat.f_bavail * stat.f_frsize, stat.f_blocks * stat.f_frsize, needed, home_bytes)


class Sampler(Protocol):
    """Anything that turns run process families into a `Devices` snapshot."""

    def sample(self, families: Mapping[str, set[int]]) -> Devices:
        """One snapshot; `families` maps each live run's id to its process ids."""
        ...


def families(leaders: Mapping[str, tuple[int | None, float | None]]) -> dict[str, set[int]]:
    """Each live run's pids: its launcher (pid and start time must match) and all its descendants."""
    found = {rid: p.pid for rid, (pid, started) in leaders.items() if (p := processes.find(pid, started))}
    if not found:
        return {}
    pids = processes.trees(found.values())
    return {run_id: pids[pid] for run_id, pid in found.items()}


def host_snapshot(fams: Mapping[str, set[int]], note: str = NO_GPU) -> Devices:
    """Host memory and the summed RSS of each run's processes."""
    vm = psutil.virtual_memory()
    by_run = tuple((rid, sum(_rss(pid) for pid in pids)) for rid, pids in sorted(fams.items()))
    return Devices(host=Host(vm.total - vm.available, vm.total, by_run), note=note)


def _rss(pid: int) -> int:
    try:
        return psutil.Process(pid).memory_info().rss
    except psutil.Error:
        return 0


class NvmlSampler:
    """GPUs through NVML (nvidia-ml-py); falls back to host memory when NVML is not there."""

    def __init__(self, home: Path | None = None) -> None:
        self._nvml: Any = None
        self.note, self.home = "", home
        self._usage = HomeUsage(home) if home is not None else None

    def sample(self, families: Mapping[str, set[int]]) -> Devices:
        """One snapshot, with the runs home's disk when it knows the home."""
        devices = self._devices(families)
        if self.home is None:
            return devices
        return replace(devices, disk=disk_snapshot(self.home, self._usage, families.keys()))

    def _devices(self, families: Mapping[str, set[int]]) -> Devices:
        if self._nvml is None:
            self._nvml = self._init()
        if self._nvml is False:
            return host_snapshot(families, self.note)
        try:
            count = self._nvml.nvmlDeviceGetCount()
            owner = {pid: rid for rid, pids in families.items() for pid in pids}
            return Devices(gpus=tuple(self._gpu(i, owner) for i in range(count)))
        except self._nvml.NVMLError as e:
            return host_snapshot(families, f"NVML failed ({e}): showing host memory")

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

    def _gpu(self, index: int, owner: Mapping[int, str]) -> Gpu:
        nv = self._nvml
        handle = nv.nvmlDeviceGetHandleByIndex(index)
        name = nv.nvmlDeviceGetName(handle)
        mem = nv.nvmlDeviceGetMemoryInfo(handle)
        try:
            util = nv.nvmlDeviceGetUtilizationRates(handle).gpu
        except nv.NVMLError:
            util = None
        by_run: dict[str, int] = {}
        for proc in _gpu_processes(nv, handle):
            run_id = owner.get(proc.pid)
            if run_id is not None:
                by_run[run_id] = by_run.get(run_id, 0) + (proc.usedGpuMemory or 0)
        name = name.decode() if isinstance(name, bytes) else str(name)
        return Gpu(index, name, int(mem.used), int(mem.total), util, tuple(sorted(by_run.items())))


def _gpu_processes(nv: Any, handle: Any) -> Iterable[Any]:
    procs: list[Any] = []
    for query in (nv.nvmlDeviceGetComputeRunningProcesses, nv.nvmlDeviceGetGraphicsRunningProcesses):
        try:
            procs += query(handle)
        except nv.NVMLError:
            continue
    return procs


class SimulatedGpus:
    """A deterministic sampler for tests and screenshots: `count` GPUs, or the host (count=0)."""

    def __init__(self, count: int = 2, total: int = 80 * GIB, runs: Iterable[str] | None = None) -> None:
        self.count, self.total = count, total
        self.runs = None if runs is None else tuple(runs)

    def sample(self, families: Mapping[str, set[int]]) -> Devices:
        """The same snapshot every time for the same runs."""
        runs = sorted(families) if self.runs is None else self.runs
        if self.count == 0:
            by_run = tuple((rid, (k + 1) * 512 << 20) for k, rid in enumerate(runs))
            return Devices(host=Host(6 * GIB, 16 * GIB, by_run), note=NO_GPU)
        gpus = []
        for i in range(self.count):
            by_run = tuple((rid, (k + 1 + i) * 3 * GIB) for k, rid in enumerate(runs))
            used = sum(n for _, n in by_run) + GIB
            gpus.append(Gpu(i, "Simulated H100", used, self.total, 35 + 20 * i, by_run))
        return Devices(gpus=tuple(gpus))
