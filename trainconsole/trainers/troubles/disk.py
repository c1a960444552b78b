"""A full disk: recognised whatever hides it, survived by waiting for space, named when it ends a run.

ENOSPC and EDQUOT reach the trainer as OSError, or wrapped: torch's zip writer reports a short write as
`RuntimeError: [enforce fail at inline_container.cc:...] . unexpected pos N vs M`, and a DataLoader
worker's error arrives re-raised as text. A checkpoint that fails for lack of space is retried every few
seconds (`TRAINCONSOLE_DISK_RETRY_S`, default 5) with the run's state kept in memory, until it is written
or `train.disk_full_wait_s` has passed; the events wait in the EventWriter meanwhile. Stdlib only.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Callable
from typing import Any, TypeVar

from trainconsole.protocol.events import DISK_FULL, DISK_FULL_HINT, free_bytes

from ..errors import TrainerError

T = TypeVar("T")
#: What torch and other wrappers say when the real error was ENOSPC / EDQUOT.
MARKERS = ("No space left on device", "Disk quota exceeded", "unexpected pos", "PytorchStreamWriter failed",
           f"errno {errno.ENOSPC}", f"Errno {errno.ENOSPC}", f"Errno {errno.EDQUOT}")


class DiskFull(TrainerError):
    """Still no space after `train.disk_full_wait_s`: the run ends failed, its last checkpoint intact."""

    def __init__(self, path: str, needed: int | None, waited: float) -> None:
        need = f", checkpoint needs ~{human(needed)}" if needed else ""
        super().__init__(f"no space left on {mount_point(path)} ({human(free_bytes(path))} free{need}); "
                         f"waited {waited:.0f} s for space (train.disk_full_wait_s)")
        self.hint = DISK_FULL_HINT.replace("; the run goes on by itself once space returns", "")


def is_disk_full(exc: BaseException | None) -> bool:
    """Whether `exc`, or an exception it was raised from, comes from a full disk or quota."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, OSError) and exc.errno in DISK_FULL:
            return True
        if any(marker in str(exc) for marker in MARKERS):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def cause(exc: BaseException, path: str | os.PathLike[str], first_line: str) -> str:
    """The `failed` event's cause for a full disk: which filesystem, how much is free, then the error."""
    return f"no space left on {mount_point(path)} ({human(free_bytes(path))} free): {first_line}"


def wait_for_space(write: Callable[[], T], path: str | os.PathLike[str], emit: Callable[..., Any],
                   wait_s: float, needed: int | None = None) -> T:
    """`write()`, retried every few seconds while it fails for lack of space (one `disk_full` warning),
    for at most `wait_s` seconds; then DiskFull."""
    interval = float(os.environ.get("TRAINCONSOLE_DISK_RETRY_S", "5"))
    started, warned = time.monotonic(), False
    while True:
        try:
            result = write()
        except Exception as exc:
            if not is_disk_full(exc):
                raise
            waited = time.monotonic() - started
            if not warned:
                warned = True
                emit("warning", code="disk_full", path=os.fspath(path), free_bytes=free_bytes(path),
                     needed_bytes=needed, message=f"no space left on {mount_point(path)} to write "
                     f"{os.path.basename(path)} ({human(free_bytes(path))} free"
                     + (f", it needs ~{human(needed)}" if needed else "") + "): the run is paused and "
                     f"retries every {interval:g} s for up to {wait_s:g} s", hint=DISK_FULL_HINT)
            if waited >= wait_s:
                raise DiskFull(os.fspath(path), needed, waited) from exc
            time.sleep(interval)
            continue
        if warned:
            emit("warning", code="disk_space_back", path=os.fspath(path),
                 paused_s=round(time.monotonic() - started, 1),
                 message=f"space is back: {os.path.basename(path)} written, the run goes on", hint="")
        return result


def mount_point(path: str | os.PathLike[str]) -> str:
    """The mount point of the filesystem that holds `path` (the path itself if it cannot tell)."""
    here = os.path.abspath(os.fspath(path))
    while not os.path.ismount(here):
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    return here


def human(n: int | None) -> str:
    """Bytes for a person: 1.5G, 240M, 12K."""
    if n is None:
        return "?"
    for unit, size in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return f"{n}B"
