"""The message queue: one JSON event per line in a run's `events.jsonl` (stdlib only).

Writers append each event with a single `os.write` to an `O_APPEND` descriptor, so several processes of
one run (DDP ranks, the tune driver, the CLI writing `killed`) can share a log without tearing lines.
Readers keep a byte offset, never block, and leave a half-written last line for the next read.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

SCHEMA_VERSION = 1

STARTED = "started"
STEP = "step"
EVAL = "eval"
CHECKPOINT = "checkpoint"
WARNING = "warning"
OOM_RECOVERED = "oom_recovered"
HISTOGRAM = "histogram"  # epoch, step, layers: {name: {min, max, counts}} (trainers/histograms.py)
TRIAL = "trial"
FINISHED = "finished"
FAILED = "failed"
STOPPED = "stopped"
KILLED = "killed"

#: Events after which a run has ended, mapped to the status they give it.
FINAL = {FINISHED: "finished", FAILED: "failed", STOPPED: "stopped", KILLED: "killed"}
STATUSES = ("running", "finished", "failed", "stopped", "killed", "lost", "queued")

Event = dict[str, Any]


def make_event(run_id: str, kind: str, **fields: Any) -> Event:
    """Build an event in the v1 shape: `{"v", "t", "run", "type", ...fields}`."""
    return {"v": SCHEMA_VERSION, "t": round(time.time(), 3), "run": run_id, "type": kind, **fields}


class EventWriter:
    """Appends events to one run's log; safe to use from several processes at once."""

    def __init__(self, path: str | os.PathLike[str], run_id: str) -> None:
        self.path = os.fspath(path)
        self.run_id = run_id
        self._fd: int | None = None

    def emit(self, kind: str, **fields: Any) -> Event:
        """Append one event with a single write and return it."""
        event = make_event(self.run_id, kind, **fields)
        line = (json.dumps(event, separators=(",", ":"), default=str) + "\n").encode()
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.write(self._fd, line)
        return event

    def close(self) -> None:
        """Close the descriptor; the next emit reopens it."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __getstate__(self) -> dict[str, Any]:
        # Descriptors don't cross process boundaries (spawned ranks, Ray): reopen lazily there.
        return {**self.__dict__, "_fd": None}


class EventReader:
    """Reads the events appended to a log since the last call; tolerant of partial and garbled lines."""

    def __init__(self, path: str | os.PathLike[str], offset: int = 0) -> None:
        self.path = os.fspath(path)
        self.offset = offset
        self.bad_lines = 0

    def read(self, max_bytes: int = 16 << 20) -> list[Event]:
        """Return the complete new events; a trailing line without its newline waits for the next call."""
        return [e for e in map(self._parse, self.read_lines(max_bytes)) if e is not None]

    def read_lines(self, max_bytes: int = 16 << 20) -> list[bytes]:
        """The complete new lines, raw (without their newline), advancing the offset past them."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                chunk = f.read(max_bytes)
        except FileNotFoundError:
            return []
        end = chunk.rfind(b"\n")
        if end < 0:
            return []
        self.offset += end + 1
        return [line for line in chunk[:end].split(b"\n") if line]

    def _parse(self, line: bytes) -> Event | None:
        try:
            event = json.loads(line)
        except ValueError:
            self.bad_lines += 1
            return None
        if not isinstance(event, dict) or "type" not in event:
            self.bad_lines += 1
            return None
        return event


def tail(path: str | os.PathLike[str], nbytes: int = 64 << 10) -> list[Event]:
    """The complete events in the last `nbytes` of a log (the first, possibly cut, line is dropped)."""
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            start = max(0, size - nbytes)
            f.seek(start)
            chunk = f.read()
    except OSError:
        return []
    if start > 0:
        chunk = chunk[chunk.find(b"\n") + 1 :]
    end = chunk.rfind(b"\n")
    reader = EventReader(path)
    return [e for e in map(reader._parse, chunk[: max(end, 0)].split(b"\n")) if e is not None]


def read_all(path: str | os.PathLike[str]) -> list[Event]:
    """Every complete event in a log, oldest first."""
    reader, events = EventReader(path), []
    while True:
        before = reader.offset
        events += reader.read()
        if reader.offset == before:
            return events
