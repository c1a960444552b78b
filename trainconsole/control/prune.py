"""Pruning: a run's checkpoints deleted, its event log, config and output kept (so its history, its
plot, `logs` and `compare` still work). `meta.json` records what was pruned, so that `resume` can say why
it cannot."""

from __future__ import annotations

import time
from pathlib import Path

from trainconsole.protocol import RunDir
from trainconsole.protocol.meta import update_meta

#: What `--keep` keeps of the checkpoints folder.
KEEPS = {"best": ("best.pt",), "last": ("last.pt",), "none": ()}


def doomed(run: RunDir, keep: str) -> list[Path]:
    """The files pruning with `keep` would delete (every checkpoint file but the kept one)."""
    try:
        files = sorted(p for p in run.checkpoints.rglob("*") if p.is_file() or p.is_symlink())
    except OSError:
        return []
    return [p for p in files if not (p.parent == run.checkpoints and p.name in KEEPS[keep])]


def size_of(files: list[Path]) -> int:
    """Bytes the files hold (those already gone count 0)."""
    total = 0
    for path in files:
        try:
            total += path.lstat().st_size
        except OSError:
            pass
    return total


def prune(run: RunDir, files: list[Path], keep: str) -> int:
    """Delete the files and record it in the run's meta.json; the bytes freed."""
    freed = size_of(files)
    for path in files:
        path.unlink(missing_ok=True)
    update_meta(run, lambda meta: {**meta, "pruned": {"at": time.time(), "keep": keep, "bytes": freed}})
    return freed
