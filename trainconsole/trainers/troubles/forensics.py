"""`train.memory_history`: GPU out-of-memory forensics with torch's own allocator history.

With a CUDA device, `torch.cuda.memory._record_memory_history` runs for the whole run; at an
out-of-memory error `_dump_snapshot` writes `<run dir>/memory_snapshot_cuda<i>_step<N>.pickle` (open it at
https://pytorch.org/memory_viz) and the largest live allocations, with the line of user code that made
each, go into the `oom_recovered` or `failed` event. The CPU has no such history: the key is accepted
and a `warning` says it is not available there.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

MB = 1 << 20
TOP = 5


class MemoryHistory:
    """Records CUDA allocations when enabled on a GPU; `at_oom(step)` dumps and summarises them."""

    def __init__(self, enabled: bool, device: torch.device, folder: Path | None,
                 emit: Callable[..., Any]) -> None:
        self.device, self.folder = device, folder
        self.active = enabled and device.type == "cuda" and folder is not None
        if enabled and not self.active:
            emit("warning", code="memory_history_unavailable",
                 message=f"train.memory_history records CUDA allocations only: not available on {device}",
                 hint="run on a GPU for a memory snapshot at an out-of-memory error")
        if self.active:
            torch.cuda.memory._record_memory_history(max_entries=100_000, device=device)

    def at_oom(self, step: int) -> dict[str, Any]:
        """Dump the snapshot; the fields for the event (empty when not recording)."""
        if not self.active:
            return {}
        device = str(self.device).replace(":", "")  # one file per rank's GPU under DDP
        path = Path(self.folder) / f"memory_snapshot_{device}_step{step}.pickle"
        torch.cuda.memory._dump_snapshot(str(path))
        snapshot = torch.cuda.memory._snapshot(self.device)
        blocks = [b for segment in snapshot["segments"] for b in segment["blocks"]
                  if b["state"] == "active_allocated"]
        top = sorted(blocks, key=lambda b: b["size"], reverse=True)[:TOP]
        return {"snapshot": str(path),
                "top_allocations": [{"mb": round(b["size"] / MB, 1), "where": _where(b)} for b in top]}


def _where(block: dict[str, Any]) -> str:
    """The innermost frame outside torch itself that allocated `block`, as `file.py:line name`."""
    for frame in block.get("frames", []):
        name = frame.get("filename", "")
        if f"{os.sep}torch{os.sep}" not in name and name and not name.startswith("??"):
            return f"{os.path.basename(name)}:{frame.get('line')} {frame.get('name', '')}".strip()
    return "?"
