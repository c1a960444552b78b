"""`train.max_memory_mb`: a real per-process memory limit, so allocations beyond it fail.

GPU: `torch.cuda.set_per_process_memory_fraction` (the caching allocator raises OutOfMemoryError).
CPU: `RLIMIT_DATA` set to the data memory the process holds after setup plus the cap. RLIMIT_DATA counts
private writable mappings (heap and anonymous mmaps: what tensors use) and, unlike RLIMIT_AS, not the
shared libraries or the 64 MiB PROT_NONE arenas glibc reserves per thread, which would make unrelated
thread starts fail. torch alone maps ~3.5 GB of address space but only ~0.9 GB of data; measured
here, both limits make `DefaultCPUAllocator: can't allocate memory` appear at the same batch size.

glibc's mmap threshold is pinned first (`mallopt(M_MMAP_THRESHOLD, 256 KiB)`): by default it rises to
32 MiB after a large block is freed, so later tensors land in heap arenas whose pages stay counted in
VmData after they are freed; a run then "stays full" after its first OOM (measured: every later
micro-batch failed with oneDNN's "could not create a primitive"). Pinned, every tensor is its own
mapping and freeing it gives the memory back to the limit at once.
"""

from __future__ import annotations

import ctypes
import gc
import resource
from typing import Any

import psutil
import torch

MB = 1 << 20
M_MMAP_THRESHOLD = -3  # mallopt parameter number (glibc malloc.h)
_DATA_LIMIT: list[tuple[int, int]] = []  # RLIMIT_DATA before the first cap


def vm_data() -> int:
    """This process's data memory in bytes (VmData in /proc/self/status), 0 where unknown."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def apply(cap_mb: int, device: torch.device) -> dict[str, Any] | None:
    """Cap this process at `cap_mb` (0: no cap); returns what was set, for the `started` event."""
    if cap_mb <= 0:
        return None
    if device.type == "cuda":
        total = torch.cuda.get_device_properties(device).total_memory
        fraction = min(1.0, cap_mb * MB / total)
        torch.cuda.set_per_process_memory_fraction(fraction, device)
        return {"device": str(device), "limit_mb": cap_mb, "fraction": round(fraction, 4)}
    pin_mmap_threshold(256 << 10)
    base = vm_data()
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    _DATA_LIMIT[:] = _DATA_LIMIT or [(soft, hard)]  # what `lift` restores
    limit = base + cap_mb * MB
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
    return {"device": "cpu", "limit_mb": cap_mb, "baseline_mb": base // MB, "rlimit_data_mb": limit // MB}


def lift() -> None:
    """Take off any cap this process set, and give back the CUDA cache: a reused worker (a Ray actor
    running the next trial) starts from a clean slate."""
    if _DATA_LIMIT:
        resource.setrlimit(resource.RLIMIT_DATA, _DATA_LIMIT.pop())
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        for index in range(torch.cuda.device_count()):
            torch.cuda.set_per_process_memory_fraction(1.0, index)
            torch.cuda.reset_peak_memory_stats(index)
        torch.cuda.empty_cache()


def give_back() -> None:
    """After a trial, in a worker that may run the next one: collect the trial's garbage and hand the
    freed memory back (the CUDA cache; the heap pages glibc keeps after a free, until `malloc_trim`).
    Measured on resnet18: a worker's RSS stayed 130-200 MB above its start after `gc.collect` alone, and
    came back to within 1 MB after the trim."""
    gc.collect()
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.empty_cache()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def held() -> dict[str, int]:
    """What this process holds now: host RSS and the CUDA memory its tensors occupy (bytes)."""
    rss, cuda = psutil.Process().memory_info().rss, 0
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        cuda = sum(torch.cuda.memory_allocated(i) for i in range(torch.cuda.device_count()))
    return {"rss": rss, "cuda": cuda}


def apply_devices(cap_mb: int, devices: list[torch.device]) -> dict[str, Any] | None:
    """Cap every device one process uses (dp's GPUs, model_parallel's stages): each GPU at `cap_mb`,
    the host once. The `started` event's record names the first and lists them all."""
    records = [apply(cap_mb, device) for device in placed(devices)]
    if not records or records[0] is None:
        return None
    return {**records[0], "devices": [r["device"] for r in records if r]}


def placed(devices: list[torch.device]) -> list[torch.device]:
    """The distinct devices of a placement, in order (all CPU stages are one host)."""
    seen: dict[str, torch.device] = {}
    for device in devices:
        seen.setdefault(str(device) if device.type == "cuda" else "cpu", device)
    return list(seen.values())


def pin_mmap_threshold(size: int) -> bool:
    """Fix glibc's mmap threshold at `size` bytes (and stop it rising); False where not glibc."""
    try:
        return bool(ctypes.CDLL("libc.so.6").mallopt(M_MMAP_THRESHOLD, size))
    except (OSError, AttributeError):
        return False
