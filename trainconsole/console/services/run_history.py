"""`history.json` beside a run's log: its state as of a byte offset of the log (`core/snapshot.py`), so a
console reattaching to a long run shows its row and plot without replaying the log.

The log stays the source. A console that has replayed a long log whole keeps what it made of it here,
with the offset it covers; the next console takes the state and reads the log from that offset on. The
file is written whole to a temporary name and renamed over the old one. Whatever else it holds is
ignored, and the log is replayed as for an older run without one: a cut or garbled file (its body's
length and digest are in its first line), another version's, or a stale one (the log is shorter than the
offset, or its first bytes or the bytes just before the offset are not those the file was made from: the
log was replaced or rewritten).

Layout: a header line `{"v", "offset", "bad_lines", "head", "mark", "body_len", "body_sha"}`, then the
body, one JSON object (the stdlib's JSON: a diverged run's NaN and Infinity come back as they were).
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
from dataclasses import dataclass
from typing import Any

from trainconsole.console.core import snapshot
from trainconsole.console.core.run_state import RunState
from trainconsole.protocol import RunDir
from trainconsole.protocol.events import decode

NAME = "history.json"
VERSION = 1
#: Logs from this size on get (and are read through) a history: a smaller one replays in one pass.
FROM_BYTES = 4 << 20
#: Bytes of the log whose digests tie a history to it: its first, and the last before the offset.
PROBE = 4096


@dataclass
class Kept:
    """A history as read back: the state as of `offset` bytes of the log."""

    state: RunState
    offset: int
    bad_lines: int  # unreadable lines the replay skipped up to the offset
    cut: float  # a new step at or before this needs the whole log (`snapshot.cut`)


def path(run: RunDir) -> str:
    """Where a run's history is kept."""
    return os.path.join(run.path, NAME)


def write(run: RunDir, state: RunState, offset: int, bad_lines: int = 0) -> bool:
    """Keep `state`, made from the log's first `offset` bytes (ending a line). False where it cannot be
    kept (a state `snapshot` does not keep, an unreadable log, a read-only home): nothing is written."""
    data = snapshot.encode(state)
    if data is None:
        return False
    try:
        head, mark = _probes(run, offset)
        body = json.dumps(data, separators=(",", ":")).encode()
        header = {"v": VERSION, "offset": offset, "bad_lines": bad_lines, "head": head, "mark": mark,
                  "body_len": len(body), "body_sha": hashlib.sha256(body).hexdigest()}
        tmp = f"{path(run)}.{os.getpid()}.tmp"
        try:
            with open(tmp, "wb") as f:
                f.write(json.dumps(header, separators=(",", ":")).encode() + b"\n" + body)
            os.replace(tmp, path(run))
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    except (OSError, ValueError):
        return False
    return True


def read(run: RunDir, size: int) -> Kept | None:
    """The run's history if it is whole and of this log (`size`: the log's size now), else None."""
    try:
        with open(path(run), "rb") as f:
            raw = f.read()
    except OSError:
        return None
    try:
        first, _, body = raw.partition(b"\n")
        header = json.loads(first)
        offset = header["offset"]
        if (header.get("v") != VERSION or not isinstance(offset, int) or not 0 < offset <= size
                or header["body_len"] != len(body) or header["body_sha"] != hashlib.sha256(body).hexdigest()
                or [header["head"], header["mark"]] != list(_probes(run, offset))):
            return None
        paused = gc.isenabled()
        gc.disable()  # (its ~20,000 lists, and the state made of them: the collector kept scanning them)
        try:
            data = _loads(body)
            return Kept(snapshot.decode(run.id, data), offset, int(header["bad_lines"]), snapshot.cut(data))
        finally:
            if paused:
                gc.enable()
    except Exception:  # noqa: BLE001 (whatever the file holds, the log is read instead)
        return None


def _loads(body: bytes) -> Any:
    """The body: orjson's parse where it can (~3x the stdlib's here), else the stdlib's (NaN and Infinity,
    which orjson refuses)."""
    return decode(body)


def _probes(run: RunDir, offset: int) -> tuple[str, str]:
    """Digests of the log's first bytes and of those just before `offset` (which must end a line)."""
    with open(run.events, "rb") as f:
        head = f.read(min(PROBE, offset))
        f.seek(max(0, offset - PROBE))
        mark = f.read(offset - max(0, offset - PROBE))
    if len(mark) != offset - max(0, offset - PROBE) or not mark.endswith(b"\n"):
        raise ValueError("the log does not reach the offset at a line's end")
    return hashlib.sha256(head).hexdigest(), hashlib.sha256(mark).hexdigest()
