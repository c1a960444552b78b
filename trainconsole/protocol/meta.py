"""A run's own notes about itself: tags, a note, what pruning removed (`meta.json`, stdlib only).

Written by the control layer only, atomically (temp file + rename) under a lock of its own, so two
consoles tagging one run at once both land; read by the index and every view.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .rundir import locked

if TYPE_CHECKING:
    from .rundir import RunDir

META = "meta.json"
META_LOCK = ".meta.lock"


def read_meta(run: RunDir) -> dict[str, Any]:
    """meta.json as a dict ({} if missing or unreadable)."""
    try:
        meta = json.loads((run.path / META).read_text())
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def update_meta(run: RunDir, change: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
    """Read, change and replace meta.json under its lock (a read-modify-write that never loses a
    concurrent one); returns what was written."""
    with locked(run.path / META_LOCK):
        meta = change(read_meta(run))
        tmp = run.path / f".{META}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(meta, indent=1))
        os.replace(tmp, run.path / META)
    return meta


def tags_of(meta: dict[str, Any]) -> list[str]:
    """The run's tags, sorted ([] when none)."""
    tags = meta.get("tags")
    return sorted(str(t) for t in tags) if isinstance(tags, list) else []
