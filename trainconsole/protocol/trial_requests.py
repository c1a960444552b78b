"""Console → tune driver: ask for one trial to stop, without a new channel (stdlib only).

A request is an empty file `RUN_DIR/stop_trials/<trial_id>`; the driver's stopper looks for it between
results and stops only that trial (the search goes on). Files are written atomically (temp + rename).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .rundir import RunDir

_SAFE = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


def request_trial_stop(run: RunDir, trial_id: str) -> Path:
    """Ask the tune run's driver to stop one trial; returns the request file."""
    if not _SAFE.match(trial_id) or trial_id.startswith("."):
        raise ValueError(f"trial_id: letters, digits, '_', '-', '.' only (got {trial_id!r})")
    folder = run.path / "stop_trials"
    folder.mkdir(mode=0o700, exist_ok=True)
    path = folder / trial_id
    tmp = folder / f".{trial_id}.{os.getpid()}.tmp"
    tmp.touch()
    os.replace(tmp, path)
    return path


def trial_stops_requested(run_dir: str | os.PathLike[str]) -> set[str]:
    """The ids of the trials the console has asked to stop."""
    try:
        return {e.name for e in os.scandir(Path(run_dir) / "stop_trials") if not e.name.startswith(".")}
    except OSError:
        return set()
