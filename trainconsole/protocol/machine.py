"""What this machine has, for the config's ranges: CPU cores, host memory, GPUs (stdlib; NVML if installed).

Read when a value is checked (once per process): the CLI checks against the machine it launches on, and
the run process checks again against the machine it trains on.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Any

MB = 1 << 20


@dataclass(frozen=True)
class Limit:
    """A bound that depends on the machine: `what` names it in errors, `read()` gives its value."""

    what: str
    read: Any  # () -> float; Any, so the frozen dataclass does not bind it as a method

    def value(self) -> float:
        """The bound on this machine."""
        return self.read()


@functools.cache
def cpu_count() -> int:
    """Logical CPU cores of this machine."""
    return os.cpu_count() or 1


@functools.cache
def host_memory_mb() -> int:
    """Physical memory of this machine in MB."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // MB
    except (ValueError, OSError, AttributeError):  # no sysconf: no bound worth guessing
        return 1 << 40


@functools.cache
def gpu_memory_mb() -> tuple[int, ...]:
    """Total memory of each visible GPU in MB (NVML; none without a driver or without nvidia-ml-py)."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # no NVML library, no driver, no GPU: no GPUs
        return ()
    try:
        totals = tuple(pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(i)).total // MB
                       for i in range(pynvml.nvmlDeviceGetCount()))
    finally:
        pynvml.nvmlShutdown()
    return _visible(totals)


def _visible(totals: tuple[int, ...]) -> tuple[int, ...]:
    """The GPUs CUDA_VISIBLE_DEVICES leaves (indices only; a UUID list is taken as all of them)."""
    mask = os.environ.get("CUDA_VISIBLE_DEVICES")
    if mask is None:
        return totals
    items = [i.strip() for i in mask.split(",") if i.strip()]
    if not all(i.isdigit() for i in items):
        return totals[: len(items)]
    return tuple(totals[int(i)] for i in items if int(i) < len(totals))


def gpu_count() -> int:
    """How many GPUs are visible here."""
    return len(gpu_memory_mb())


def largest_device_mb() -> int:
    """The largest memory of one device here: the biggest GPU, or host memory (whichever is larger)."""
    return max((host_memory_mb(), *gpu_memory_mb()))


CPUS = Limit("the CPU cores of this machine", cpu_count)
HOST_MEMORY = Limit("this machine's memory in MB", host_memory_mb)
DEVICE_MEMORY = Limit("the largest device's memory in MB (host memory on CPU)", largest_device_mb)
