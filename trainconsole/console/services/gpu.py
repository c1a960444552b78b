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
from typing import Protocol

from trainconsole.protocol import nvml, processes
from trainconsole.protocol.nvml import NO_GPU, Gpu, Host

GIB = 1 << 30
#: Seconds between two sums of what the home holds (its runs' folders, its trash).
USAGE_S = 30.0
__all__ = ["GIB", "NO_GPU", "Devices", "Disk", "Gpu", "Host", "NvmlSampler", "SimulatedGpus", "families"]


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
        from trainconsole.protocol import index  # (the sampler's thread, after the first frame)

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


def _devices(reading: nvml.Reading) -> Devices:
    return Devices(gpus=reading.gpus, host=reading.host, note=reading.note)


class NvmlSampler:
    """GPUs through NVML (`protocol/nvml.py`); falls back to host memory when NVML is not there."""

    def __init__(self, home: Path | None = None) -> None:
        self.nvml, self.home = nvml.Nvml(), home
        self._usage = HomeUsage(home) if home is not None else None

    def sample(self, families: Mapping[str, set[int]]) -> Devices:
        """One snapshot, with the runs home's disk when it knows the home."""
        owner = {pid: rid for rid, pids in families.items() for pid in pids}
        devices = _devices(self.nvml.read(owner, families))
        if self.home is None:
            return devices
        return replace(devices, disk=disk_snapshot(self.home, self._usage, families.keys()))


class SimulatedGpus:
    """A deterministic sampler for tests and screenshots: `count` GPUs, or the host (count=0)."""

    def __init__(self, count: int = 2, total: int = 80 * GIB, runs: Iterable[str] | None = None) -> None:
        self.count, self.total = count, total
        self.runs = None if runs is None else tuple(runs)

    def sample(self, families: Mapping[str, set[int]]) -> Devices:
        """The same snapshot every time for the same runs."""
        runs = sorted(families) if self.runs is None else self.runs
        return _devices(nvml.simulated(self.count, runs, self.total))
