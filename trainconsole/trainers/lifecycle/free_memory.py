"""Free memory of a run's devices, for the queue: NVML on GPUs, available host memory on CPU.

TRAINCONSOLE_FREE_MB_FILE names a file holding one number, the free MB of every device: a stand-in for
the hardware, so that tests (and dry runs) can make a device busy and free it.
"""

from __future__ import annotations

import os
from typing import Any

MB = 1 << 20
FAKE = "TRAINCONSOLE_FREE_MB_FILE"


def enough(devices: Any, need_mb: int) -> bool:
    """Whether each of the run's devices has `need_mb` MB free."""
    return all(free >= need_mb for free in free_mb(devices))


def free_mb(devices: Any) -> list[float]:
    """Free MB per device the run would use (`[strategy] devices`: auto, a count, or GPU indices)."""
    fake = os.environ.get(FAKE)
    if fake:
        return [_read_number(fake)]
    gpus = _gpu_free_mb(devices)
    return gpus if gpus is not None else [_host_free_mb()]


def _read_number(path: str) -> float:
    try:
        with open(path) as f:
            return float(f.read().strip() or 0)
    except (OSError, ValueError):
        return 0.0


def _gpu_free_mb(devices: Any) -> list[float] | None:
    """NVML's free memory of the chosen GPUs; None without an NVIDIA driver or GPU."""
    try:
        import pynvml

        pynvml.nvmlInit()
        count = pynvml.nvmlDeviceGetCount()
    except Exception:  # noqa: BLE001 - ImportError, NVMLError_LibraryNotFound, ...
        return None
    if count == 0:
        return None
    indices = _indices(devices, count)
    return [pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(i)).free / MB for i in indices]


def _indices(devices: Any, count: int) -> list[int]:
    if isinstance(devices, list):
        return [i for i in devices if i < count]
    if isinstance(devices, int):
        return list(range(min(devices, count)))
    return list(range(count))


def _host_free_mb() -> float:
    try:
        import psutil

        return psutil.virtual_memory().available / MB
    except ImportError:
        with open("/proc/meminfo") as f:
            fields = dict(line.split(":", 1) for line in f)
        return int(fields["MemAvailable"].split()[0]) / 1024
