"""The run index: one summary per ended run in `$TRAINCONSOLE_HOME/index.json` (stdlib only).

A summary is what `ls`, filters and the console's first rows need (the `ls` row: status, latest
metrics, size, tags; the best metrics; the config's keys), so that listing a home of 10,000 runs reads
one file and stats each run instead of replaying every log. It is a cache, never the only copy of a
fact: each entry is derived from the run's own files and carries their fingerprint (events.jsonl's
size and mtime, the run directory's and its checkpoints' mtimes: run.json, meta.json and checkpoints
are replaced by rename, which touches their directory); an entry whose fingerprint no longer matches is
rebuilt, and a missing or unreadable index is rebuilt from the runs. Only runs with a final status whose files
have been still for a few seconds are kept: a live run's row is derived afresh each time.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .events import EVAL, FINAL, FINISHED, STEP, Event, tail
from .meta import read_meta, tags_of
from .rundir import RunDir

INDEX = "index.json"
#: Bumped when an entry's shape changes: an index of another version is rebuilt.
VERSION = 1
#: Seconds after its last change before a run's summary is kept (see `settled`).
SETTLE_S = 2.0
ROW_FIELDS = ("id", "name", "kind", "strategy", "pid", "host", "started_at", "ended_at")
NOT_METRICS = frozenset({"v", "t", "run", "type", "mem"})
#: What a status function gets: the run, its tail of events and its run.json.
StatusOf = Callable[[RunDir, list[Event], dict[str, Any]], str]

Entry = dict[str, Any]  # {"key": fingerprint, "row": the ls row, "best": {...}, "config": {dotted: value}}


def fingerprint(run: RunDir) -> list[int] | None:
    """What changes when anything a summary is derived from changes (None: the run is unreadable)."""
    try:
        events, folder = os.stat(run.events), os.stat(run.path)
    except OSError:
        return None
    try:
        checkpoints = os.stat(run.checkpoints).st_mtime_ns
    except OSError:
        checkpoints = 0
    return [events.st_size, events.st_mtime_ns, folder.st_mtime_ns, checkpoints]


def settled(key: list[int] | None) -> bool:
    """Whether a fingerprint can be trusted later: a file changed within the last SETTLE_S could change
    again within the filesystem's clock tick and keep its mtime (git's "racily clean" entries)."""
    return key is not None and max(key[1:]) < time.time_ns() - SETTLE_S * 1e9


def row(run: RunDir, info: dict[str, Any], events: list[Event], status: str) -> dict[str, Any]:
    """The run as one `ls` row: id, name, kind, strategy, pid, host, started_at, ended_at, status, last
    (the latest metrics), cause (a failure's), tags, note and size (bytes on disk)."""
    last: dict[str, Any] = {}
    for event in events:
        if event.get("type") in (STEP, EVAL, FINISHED):
            last.update({k: v for k, v in event.items() if k not in NOT_METRICS})
    out = {k: info.get(k) for k in ROW_FIELDS}
    meta = read_meta(run)
    out.update(id=run.id, status=status, last=last, tags=tags_of(meta), note=str(meta.get("note") or ""),
               size=disk_size(run.path))
    failure = next((e for e in reversed(events) if e.get("type") == "failed"), None)
    if failure is not None and status == "failed":
        out["cause"] = failure.get("cause")
    return out


def summarize(run: RunDir, status_of: StatusOf) -> Entry:
    """A run's whole summary, derived from its files now."""
    key = fingerprint(run)  # before reading: a change meanwhile leaves the entry stale, never wrong
    info, events = run.read_info(), tail(run.events)
    return {"key": key, "row": row(run, info, events, status_of(run, events, info)),
            "best": best_metrics(run.events), "config": flat_config(run.config)}


def best_metrics(path: Path) -> dict[str, Any]:
    """The best `val_acc` (highest) and `val_loss` (lowest) of every eval in the log, with their epochs;
    only eval lines are parsed, so a log of megabytes of steps costs one read."""
    best: dict[str, Any] = {}
    try:
        data = path.read_bytes()
    except OSError:
        return best
    for line in data.split(b"\n"):
        if b'"eval"' not in line:
            continue
        with contextlib.suppress(ValueError):
            event = json.loads(line)
            if isinstance(event, dict) and event.get("type") == EVAL:
                _better(best, event, "val_acc", max)
                _better(best, event, "val_loss", min)
    return best


def _better(best: dict[str, Any], event: Event, name: str, pick: Callable[..., float]) -> None:
    value = event.get(name)
    if not isinstance(value, (int, float)) or value != value:  # NaN never wins
        return
    if name not in best or pick(value, best[name]) != best[name]:
        best[name], best[f"{name}_epoch"] = value, event.get("epoch")


def flat_config(path: Path) -> dict[str, Any]:
    """The run's config as dotted keys (`train.lr`), scalars and lists only ({} if unreadable)."""
    try:
        config = tomllib.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    flat: dict[str, Any] = {}
    for section, table in config.items():
        if not isinstance(table, dict):
            flat[section] = table
            continue
        for key, value in table.items():
            if not isinstance(value, dict):
                flat[f"{section}.{key}"] = value
    return flat


def disk_size(path: Path) -> int:
    """Bytes of every file under `path` (checkpoints, logs, events)."""
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(folder, name)).st_size
    return total


def load(home: Path) -> dict[str, Entry]:
    """The index's entries by run id ({} if missing, unreadable or of another version)."""
    try:
        data = json.loads((home / INDEX).read_bytes())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(data.get("runs"), dict):
        return {}
    return data["runs"]


def save(home: Path, entries: dict[str, Entry]) -> None:
    """Replace the index atomically; a home we cannot write to keeps working without one."""
    tmp = home / f".{INDEX}.{os.getpid()}.tmp"
    try:
        tmp.write_text(json.dumps({"version": VERSION, "runs": entries}, separators=(",", ":")))
        os.replace(tmp, home / INDEX)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()


def summaries(home: Path, runs: list[RunDir], status_of: StatusOf, every: bool = True) -> list[Entry]:
    """Each run's summary, from the index where its fingerprint still matches, else derived (and kept
    in the index when the run has ended). `every`: these are all the home's runs, so entries of runs
    not among them are dropped. The index is rewritten only when it changed."""
    old = load(home)
    kept: dict[str, Entry] = {} if every else dict(old)
    out: list[Entry] = []
    for run in runs:
        entry = old.get(run.id)
        key = fingerprint(run)
        if entry is None or key is None or entry.get("key") != key:
            entry = summarize(run, status_of)
        kept.pop(run.id, None)
        if entry["row"]["status"] in FINAL.values() and settled(entry["key"]):
            kept[run.id] = entry
        out.append(entry)
    if kept.keys() != old.keys() or any(kept[i] is not old.get(i) for i in kept):
        save(home, kept)
    return out


def forget(home: Path, run_id: str) -> None:
    """Drop one run's entry (a run deleted or moved); the next listing would notice anyway."""
    entries = load(home)
    if entries.pop(run_id, None) is not None:
        save(home, entries)
