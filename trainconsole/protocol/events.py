"""The message queue: one JSON event per line in a run's `events.jsonl` (stdlib only).

Writers append each event with a single `os.write` to an `O_APPEND` descriptor, so several processes of
one run (DDP ranks, the tune driver, the CLI writing `killed`) can share a log without tearing lines.
Readers keep a byte offset, never block, and leave a half-written last line for the next read.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import gc
import json
import os
import threading
import time
from collections.abc import Callable
from typing import Any

SCHEMA_VERSION = 1

STARTED = "started"
STEP = "step"
EVAL = "eval"
RESULT = "result"  # a script's result printed once after training: test_* fields, HF's train summary
SUMMARY = "summary"  # a script's epoch summary line (`Epoch 1/3 - Loss: 0.41`), at the current step
CHECKPOINT = "checkpoint"
WARNING = "warning"
OOM_RECOVERED = "oom_recovered"
# epoch, step, layers: {name: {min, max, counts}} (trainconsole/trainers/builtin/histograms.py)
HISTOGRAM = "histogram"
TRIAL = "trial"
FINISHED = "finished"
FAILED = "failed"
STOPPED = "stopped"
KILLED = "killed"

#: `source` of a script run's `step`/`eval`/`result` events (absent: read from its output as before): PROBE,
#: measured inside its processes (exact); TEXT, a printed line's metrics, placed by the probe's stamp.
SOURCE_PROBE = "probe"
SOURCE_TEXT = "text"

#: Events after which a run has ended, mapped to the status they give it.
FINAL = {FINISHED: "finished", FAILED: "failed", STOPPED: "stopped", KILLED: "killed"}
STATUSES = ("running", "finished", "failed", "stopped", "killed", "lost", "queued")

Event = dict[str, Any]
#: Write errors that mean the disk is full: the run waits for space instead of failing.
DISK_FULL = (errno.ENOSPC, errno.EDQUOT)
DISK_FULL_HINT = ("free space on that filesystem, move $TRAINCONSOLE_HOME to a larger one, or keep fewer "
                  "checkpoints; the run goes on by itself once space returns")


def make_event(run_id: str, kind: str, **fields: Any) -> Event:
    """Build an event in the v1 shape: `{"v", "t", "run", "type", ...fields}`."""
    return {"v": SCHEMA_VERSION, "t": round(time.time(), 3), "run": run_id, "type": kind, **fields}


#: The ballast file beside the events (see EventWriter); a killed run's is removed by `kill`.
RESERVE = ".reserve"


class EventWriter:
    """Appends events to one run's log; safe to use from several processes at once.

    On a full disk (ENOSPC, EDQUOT) nothing is lost and nothing fails: events wait in memory, in order,
    and every later emit (or `retry`) tries them again. With `reserve_bytes`, the writer keeps a ballast
    file of that size beside the log and deletes it at the first failed write, so that a `warning` with
    code `disk_full` (and, when the run must end, its final event) can still be written; when writing
    works again it says so (`disk_space_back`) and puts the ballast back.
    """

    def __init__(self, path: str | os.PathLike[str], run_id: str, reserve_bytes: int = 0) -> None:
        self.path = os.fspath(path)
        self.run_id = run_id
        self._fd: int | None = None
        self._pending: list[bytes] = []
        self._torn = False  # a short write left part of a line: end it with a newline before the next
        self.full_since: float | None = None
        self._reserve_bytes = reserve_bytes
        self._reserve = os.path.join(os.path.dirname(self.path), RESERVE)
        self.on_emit: Callable[[Event], object] | None = None  # told of each event (the notify command)
        # the training thread and the cost meter's emit at once: one writes (and pops) what waits at a time
        self._lock = threading.RLock()
        if reserve_bytes:
            self._make_reserve()

    def emit(self, kind: str, **fields: Any) -> Event:
        """Append one event with a single write and return it (kept for later if the disk is full)."""
        event = make_event(self.run_id, kind, **fields)
        line = (json.dumps(event, separators=(",", ":"), default=str) + "\n").encode()
        with self._lock:
            self._pending.append(line)
            self.retry()
        if self.on_emit is not None:
            self.on_emit(event)
        return event

    def retry(self) -> bool:
        """Write the events that wait, oldest first; False if they could not all be written (True once
        they are, even into the freed ballast while the disk stays full: then no `disk_space_back`)."""
        with self._lock:
            was_full = self.full_since
            try:
                self._write_pending()
            except OSError as exc:
                if exc.errno not in DISK_FULL:
                    raise
                self._on_full()
                return False
            if was_full is not None:
                if free_bytes(self.path) < self._reserve_bytes:  # written into our own ballast: still full
                    return True
                self.full_since = None
                self._make_reserve()
                paused = round(time.time() - was_full, 1)
                self.emit(WARNING, code="disk_space_back", path=self.path, paused_s=paused,
                          message=f"space is back after {paused} s: the held events are written", hint="")
            return True

    @property
    def waiting(self) -> int:
        """Events held in memory for lack of space."""
        return len(self._pending)

    def _write_pending(self) -> None:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        if self._torn:
            os.write(self._fd, b"\n")  # readers skip the torn line; the whole event follows
            self._torn = False
        while self._pending:
            line = self._pending[0]
            written = os.write(self._fd, line)
            if written < len(line):
                self._torn = True
                raise OSError(errno.ENOSPC, "short write", self.path)
            self._pending.pop(0)

    def _on_full(self) -> None:
        """The first failed write: free the ballast and say so, in order, after what waits."""
        if self.full_since is not None:
            return
        self.full_since = time.time()
        released = self._release_reserve()
        free = free_bytes(self.path)
        self._pending.append((json.dumps(make_event(
            self.run_id, WARNING, code="disk_full", path=self.path, free_bytes=free,
            message=f"no space left on the disk of {self.path} ({free} bytes free): events are kept in "
            "memory and written when space returns", hint=DISK_FULL_HINT)) + "\n").encode())
        if released:
            try:
                self._write_pending()
            except OSError as exc:
                if exc.errno not in DISK_FULL:
                    raise

    def _make_reserve(self) -> None:
        if not self._reserve_bytes or os.path.exists(self._reserve):
            return
        try:
            with open(self._reserve, "wb") as f:
                f.write(b"\0" * self._reserve_bytes)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(self._reserve)

    def _release_reserve(self) -> bool:
        try:
            os.unlink(self._reserve)
            return True
        except OSError:
            return False

    def close(self) -> None:
        """Write what waits (once more), remove the ballast, close the descriptor; emit reopens it."""
        with self._lock:
            with contextlib.suppress(OSError):
                self.retry()
            if self._reserve_bytes:
                self._release_reserve()
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def __getstate__(self) -> dict[str, Any]:
        # Descriptors don't cross process boundaries (spawned ranks, Ray): reopen lazily there; the
        # ballast belongs to the process that made it.
        state = {**self.__dict__, "_fd": None, "_pending": [], "_reserve_bytes": 0}
        del state["_lock"]  # a lock doesn't pickle: each process gets its own
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()


def free_bytes(path: str | os.PathLike[str]) -> int:
    """Bytes free to an unprivileged writer on the filesystem that holds `path`."""
    try:
        stat = os.statvfs(os.path.dirname(os.fspath(path)) or ".")
    except OSError:
        return 0
    return stat.f_bavail * stat.f_frsize


class EventReader:
    """Reads the events appended to a log since the last call; tolerant of partial and garbled lines."""

    def __init__(self, path: str | os.PathLike[str], offset: int = 0) -> None:
        self.path = os.fspath(path)
        self.offset = offset
        self.bad_lines = 0

    def read(self, max_bytes: int = 16 << 20) -> list[Event]:
        """Return the complete new events; a trailing line without its newline waits for the next call."""
        events, bad = parse_lines(self.read_lines(max_bytes))
        self.bad_lines += bad
        return events

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


@functools.cache
def fast_loads() -> Callable[[bytes], object]:
    """orjson's `loads` when installed, else the stdlib's (about twice as slow): imported at the first read,
    as the protocol imports only the stdlib at module level."""
    try:
        from orjson import loads
    except ImportError:  # a stdlib-only install still reads logs
        return json.loads
    return loads


def parse_lines(lines: list[bytes]) -> tuple[list[Event], int]:
    """Events from raw log lines, and how many lines were not events: the one reader of event-log lines.

    One parse of the whole batch as a JSON array beats one per line; a garbled line sends the batch down
    the slow path, line by line. Measured on a 500,000-event log (99 MiB, 1 MiB batches;
    benchmarks/console_reattach.py): stdlib json 1.6 s, orjson 0.9 s, orjson with the cyclic GC paused
    during the batch 0.5 s. A batch makes tens of thousands of small dicts, each of which counts towards a
    collection that then scans every object the reader's process holds; none of them can form a cycle.
    """
    if not lines:
        return [], 0
    loads, paused = fast_loads(), gc.isenabled()
    gc.disable()
    try:
        try:
            batch = loads(b"[" + b",".join(lines) + b"]")
        except ValueError:  # orjson.JSONDecodeError and json.JSONDecodeError are both ValueErrors
            batch = []
        if len(batch) != len(lines):  # (also a torn line of two objects, `{..},{..}`: no event, one by one)
            batch = [_loads(line, loads) for line in lines]
    finally:
        if paused:
            gc.enable()
    events = [e for e in batch if isinstance(e, dict) and "type" in e]  # type: ignore[union-attr]
    return events, len(batch) - len(events)  # type: ignore[arg-type]


def decode(data: bytes | str) -> object:
    """JSON decoded by orjson where it reads it (~3x the stdlib's speed), else by the stdlib (NaN and
    Infinity, which json.dumps writes for a diverged loss and orjson refuses); ValueError if neither can."""
    try:
        return fast_loads()(data)  # type: ignore[arg-type]
    except ValueError:  # (orjson.JSONDecodeError is one)
        return json.loads(data)


def _loads(line: bytes, loads: Callable[[bytes], object]) -> object:
    """`decode` of one log line, inline (a replay reads 500,000 of them), None where it is not JSON."""
    try:
        return loads(line)
    except ValueError:
        pass
    try:  # orjson refuses NaN and Infinity, which json.dumps writes (a diverged loss)
        return json.loads(line)
    except ValueError:
        return None


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
    return parse_lines([line for line in chunk[: max(end, 0)].split(b"\n") if line])[0]


def read_all(path: str | os.PathLike[str]) -> list[Event]:
    """Every complete event in a log, oldest first."""
    reader, events = EventReader(path), []
    while True:
        before = reader.offset
        events += reader.read()
        if reader.offset == before:
            return events
