"""Console → a run on another host: stop and kill requests through the run directory (stdlib only).

A host cannot signal a process in another host's process table, so `stop` and `kill` of such a run write a
request, `RUN_DIR/requests/<action>`, naming the process they are for (pid and start time, from run.json);
the run's top process obeys it from its watchdog thread (`trainconsole/trainers/lifecycle/watchdog.py`):
stop → the
stop signal
it would have got (checkpoint and exit), kill → its whole process tree on its host, then `killed`. A
request for another process of the run (one from before a resume) is never obeyed, only removed. Files are
written atomically (temp + rename), as a trial's stop request is (`trial_requests.py`).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from .processes import same_start

FOLDER = "requests"
STOP, KILL = "stop", "kill"
ACTIONS = (STOP, KILL)


def request(run_path: str | os.PathLike[str], action: str, info: dict[str, Any], sender: str) -> Path:
    """Ask the run's current process (run.json's pid and start time, in `info`) to stop or be killed;
    `sender` is the asking host. Returns the request file."""
    if action not in ACTIONS:
        raise ValueError(f"action: one of {', '.join(ACTIONS)} (got {action!r})")
    folder = Path(run_path) / FOLDER
    folder.mkdir(mode=0o700, exist_ok=True)
    body = {"action": action, "pid": info.get("pid"), "pid_started": info.get("pid_started"),
            "t": time.time(), "from": sender}
    path = folder / action
    tmp = folder / f".{action}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(body))
    os.replace(tmp, path)
    return path


def pending(run_path: str | os.PathLike[str], pid: int, started: float) -> list[str]:
    """The actions asked of the process with this pid and start time (kill first); requests meant for
    another process of the run are removed. Cheap when there are none (one failed `scandir`)."""
    try:
        names = [e.name for e in os.scandir(Path(run_path) / FOLDER) if e.name in ACTIONS]
    except OSError:
        return []
    found = []
    for action in sorted(names, key=ACTIONS.index, reverse=True):
        path = Path(run_path) / FOLDER / action
        try:
            body = json.loads(path.read_text())
            mine = body.get("pid") == pid and same_start(float(body.get("pid_started")), started)
        except (OSError, ValueError, TypeError):
            mine = False
        if mine:
            found.append(action)
        else:
            done(run_path, action)
    return found


def done(run_path: str | os.PathLike[str], action: str) -> None:
    """Remove a request once obeyed (or found stale)."""
    (Path(run_path) / FOLDER / action).unlink(missing_ok=True)
