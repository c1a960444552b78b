"""Memory of a script's whole process tree (ranks, DataLoader workers): host RSS, and GPU memory per device
from NVML, in the `mem` shape of the built-in runs' `step` events (`{"devices": [...], "rss": bytes}`)."""

from __future__ import annotations

from typing import Any

import psutil

from trainconsole.protocol import processes
from trainconsole.protocol.shapes import DeviceMem, Mem


class TreeMemory:
    """Samples the memory of a process and all its descendants."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.nvml = _nvml()
        self.peaks: dict[int, int] = {}

    def __call__(self) -> Mem | None:
        """`{"devices": [{"device", "allocated", "reserved", "peak"}], "rss": bytes}`; None if gone."""
        procs = list(processes.tree(self.pid).values())
        if not procs:
            return None
        rss = 0
        for proc in procs:
            try:
                rss += proc.memory_info().rss
            except psutil.Error:
                continue
        return {"devices": self._devices({p.pid for p in procs}), "rss": rss}

    def _devices(self, pids: set[int]) -> list[DeviceMem]:
        if self.nvml is None:
            return []
        found = []
        for index in range(self.nvml.nvmlDeviceGetCount()):
            used = _used_by(self.nvml, index, pids)
            if used:
                self.peaks[index] = max(self.peaks.get(index, 0), used)
                found.append({"device": f"cuda:{index}", "allocated": used, "reserved": used,
                              "peak": self.peaks[index]})
        return found


def _used_by(nvml: Any, index: int, pids: set[int]) -> int:
    try:
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        procs = nvml.nvmlDeviceGetComputeRunningProcesses(handle)
    except Exception:  # noqa: BLE001 - NVMLError and friends: no figure for this device
        return 0
    return sum(p.usedGpuMemory or 0 for p in procs if p.pid in pids)


def _nvml() -> Any:
    """pynvml, initialised, or None where there is no NVIDIA driver."""
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml
    except Exception:  # noqa: BLE001 - ImportError or NVMLError_LibraryNotFound
        return None
