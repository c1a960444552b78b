"""What an ended run's log gives its `ls` row, kept beside the log (`summary.json`; stdlib only).

The first listing of a big home would otherwise replay every run's log (`index.scan`, `index.fold`):
two thirds of its cost. The run writes this summary as it ends (`trainers/entry.py`, after its last event
and run.json's `ended_at`), so the run index (`index.summarize`) reads one small file per run.

The log stays the source: a summary carries the log's size and mtime, taken before the log was read,
and is read back only while both still match (a log that grew since, by a resume or a `killed` the
console wrote, is read whole again). It is written to a temporary file and renamed; a summary that is
missing, cut, garbled or of another version reads as none.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from typing import Any

from .run_files import loads

NAME = "summary.json"
#: Bumped when the summary's shape changes: summaries of another version are not read.
VERSION = 1
#: The largest log the run summarizes as it ends: reading it holds the run's exit (and a `stop` waits on
#: that), ~0.04 s a MiB of a trainer's log here, ~0.3 s a MiB of one whose steps carry no totals (every
#: step parsed for the mean rate). A larger log is read by the first listing, as an older run's.
WRITE_MAX_BYTES = 16 << 20
#: Its parts (`index.log_parts`): best metrics, the row's facts (`RunRow.facts`), the latest metrics,
#: and the events a status and a place's row fields read (`started` and the final ones).
PARTS = {"best": dict, "facts": dict, "last": dict, "events": list}


def log_key(run_path: str) -> str:
    """The log's size and mtime ("" when it cannot be read)."""
    try:
        found = os.stat(run_path + "/events.jsonl")
    except OSError:
        return ""
    return f"{found.st_size},{found.st_mtime_ns}"


def read(run_path: str) -> dict[str, Any] | None:
    """The summary's parts while the log is the one it was made from, else None."""
    try:
        with open(run_path + "/" + NAME, "rb") as f:
            data = f.read()
    except OSError:
        return None
    return parse(data, lambda: log_key(run_path))


def parse(data: bytes | None, key: str | Callable[[], str]) -> dict[str, Any] | None:
    """The parts of a summary's bytes while `key` (the log's `log_key` now, or a function giving it) is
    the one it was made from, else None."""
    found = loads(data)
    if not isinstance(found, dict) or found.get("v") != VERSION or not found.get("log"):
        return None
    if any(not isinstance(found.get(name), kind) for name, kind in PARTS.items()):
        return None
    now = key() if callable(key) else key
    return {name: found[name] for name in PARTS} if found["log"] == now else None


def write(run_path: str, key: str, parts: dict[str, Any]) -> None:
    """Keep the parts made from the log as it was at `key` (`log_key`, taken before reading it); a run
    directory we cannot write to goes without (its log is read instead)."""
    if not key:
        return
    tmp = f"{run_path}/.{NAME}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w") as f:
            json.dump({"v": VERSION, "log": key, **{name: parts[name] for name in PARTS}}, f)
        os.replace(tmp, run_path + "/" + NAME)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
