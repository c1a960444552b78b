"""Recognising an out-of-memory failure, freeing what it left behind, and saying how full memory was."""

from __future__ import annotations

import ctypes
import gc
from typing import Any

import psutil
import torch

from ..errors import TrainerError
from .memory_cap import MB, vm_data

CPU_MARKERS = ("can't allocate memory", "DefaultCPUAllocator", "CUDA out of memory", "out of memory")
#: oneDNN's words when it cannot allocate a primitive's workspace: out of memory only under a CPU cap.
CAPPED_MARKERS = ("could not create a primitive",)


class OutOfMemory(TrainerError):
    """Out of memory even at a micro-batch of 1; carries its own hint for the `failed` event."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.hint = hint
        self.event_fields: dict[str, Any] = {}  # extra `failed` event fields: memory, forensics


def is_oom(exc: BaseException, capped: bool = False) -> bool:
    """torch.OutOfMemoryError (CUDA), MemoryError, or the CPU allocator's (or, `capped`, oneDNN's)
    RuntimeError."""
    if isinstance(exc, (torch.OutOfMemoryError, MemoryError)):
        return True
    markers = CPU_MARKERS + CAPPED_MARKERS if capped else CPU_MARKERS
    return isinstance(exc, RuntimeError) and any(m in str(exc) for m in markers)


def free(device: torch.device) -> None:
    """Collect the failed step's garbage and hand cached blocks back (call outside the `except`)."""
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
    else:
        trim_heap()


def trim_heap() -> None:
    """Give glibc's free heap pages back to the OS. After a large tensor is freed, glibc raises its mmap
    threshold and keeps later tensors on the heap, which it does not shrink by itself: under a CPU cap,
    oneDNN could then not even map its kernels ("could not create a primitive")."""
    global _LIBC
    if _LIBC is None:
        try:
            _LIBC = ctypes.CDLL("libc.so.6")
        except OSError:
            _LIBC = False
    if _LIBC:
        _LIBC.malloc_trim(0)


_LIBC: Any = None


def memory_at(device: torch.device) -> dict[str, Any]:
    """Memory figures in MB at the moment of a failure (device allocator on GPU, process on CPU)."""
    if device.type == "cuda":
        return {"allocated_mb": torch.cuda.memory_allocated(device) // MB,
                "reserved_mb": torch.cuda.memory_reserved(device) // MB,
                "peak_mb": torch.cuda.max_memory_allocated(device) // MB}
    return {"rss_mb": psutil.Process().memory_info().rss // MB, "data_mb": vm_data() // MB}
