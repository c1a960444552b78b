"""Deleting runs: into the home's trash and back, and for good (the control layer's hands; `Control`
decides what may be deleted).

A run in the trash is its whole directory moved (one rename, so a reader sees it either here or there),
with `trashed.json` saying when; restoring renames it back and removes that file, so the run is the same
run again: its events, config, checkpoints, tags and notes.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from trainconsole.protocol import RunDir, index

TRASH = "trash"
TRASHED = "trashed.json"


def trash_of(home: Path) -> Path:
    """The home's trash folder (made, mode 0700)."""
    folder = home / TRASH
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def trashed(home: Path) -> list[RunDir]:
    """Every run in the trash, oldest id first."""
    try:
        names = sorted(e.name for e in os.scandir(home / TRASH) if e.is_dir())
    except OSError:
        return []
    return [RunDir(home / TRASH / name) for name in names]


def find_trashed(home: Path, run_id: str) -> RunDir | None:
    """The trashed run with this id, or a unique prefix or suffix of it."""
    hits = [r for r in trashed(home) if r.id == run_id]
    hits = hits or [r for r in trashed(home) if run_id and (r.id.startswith(run_id) or r.id.endswith(run_id))]
    return hits[0] if len(hits) == 1 else None


def to_trash(home: Path, run: RunDir) -> RunDir:
    """Move a run into the trash (the caller holds its lock and has checked it is not alive)."""
    dest = RunDir(trash_of(home) / run.id)
    os.rename(run.path, dest.path)
    (dest.path / TRASHED).write_text(json.dumps({"trashed_at": time.time()}))
    index.forget(home, run.id)
    return dest


def from_trash(home: Path, run: RunDir) -> RunDir:
    """Move a trashed run back among the runs."""
    dest = RunDir(home / "runs" / run.id)
    os.rename(run.path, dest.path)
    (dest.path / TRASHED).unlink(missing_ok=True)
    return dest


def trashed_at(run: RunDir) -> float:
    """When a run went to the trash (its folder's change time if the record is gone)."""
    try:
        return float(json.loads((run.path / TRASHED).read_text())["trashed_at"])
    except (OSError, ValueError, KeyError, TypeError):
        return run.path.stat().st_ctime


def delete(home: Path, run: RunDir) -> int:
    """Delete a run's directory for good; the bytes it held."""
    size = index.disk_size(run.path)
    shutil.rmtree(run.path, ignore_errors=True)
    index.forget(home, run.id)
    return size
