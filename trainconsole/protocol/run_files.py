"""One look at a run directory for the run index (stdlib only): what `index.summarize` reads of a run,
taken through one open directory so that a home of 100,000 runs is read with few system calls.

The directory is opened once; its entries (and its subdirectories', for the bytes on disk) are listed
and sized through that descriptor, and the few small files a summary reads (run.json, meta.json,
config.toml, the log's `summary.json`) are opened relative to it. The fingerprint (`index.fingerprint`'s
string: the log's size and mtime, the directory's and its checkpoints' mtimes) is taken before any file is
read, so a change meanwhile leaves the summary stale (and rebuilt at the next listing), never wrong.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import Any

from .events import decode

EVENTS, CHECKPOINTS, INFO, CONFIG = "events.jsonl", "checkpoints", "run.json", "config.toml"
META, SUMMARY = "meta.json", "summary.json"
#: Bytes per read of a run's small file.
READ = 1 << 16


@dataclass
class RunFiles:
    """What one look at a run directory found: its fingerprint ("" when the log or the directory cannot
    be read), its log's key (`run_summary.log_key`'s), the bytes of every file under it (as
    `index.disk_size` counts them), and the raw bytes of its small files (None: missing or unreadable)."""

    key: str
    log_key: str
    size: int
    info: bytes | None
    meta: bytes | None
    config: bytes | None
    summary: bytes | None


def fingerprint(path: str) -> str:
    """What changes when anything a summary of the run at `path` is derived from changes ("": the run is
    unreadable). Strings, not Paths: this runs for every run of every listing."""
    try:
        events, folder = os.stat(path + "/events.jsonl"), os.stat(path)
    except OSError:
        return ""
    try:
        checkpoints = os.stat(path + "/checkpoints").st_mtime_ns
    except OSError:
        checkpoints = 0
    return f"{events.st_size},{events.st_mtime_ns},{folder.st_mtime_ns},{checkpoints}"


def fingerprint_at(folder: int, name: str) -> str:
    """`fingerprint` of the run `name` in the directory open as `folder` (each path walked from there)."""
    try:
        events, run = os.stat(name + "/events.jsonl", dir_fd=folder), os.stat(name, dir_fd=folder)
    except OSError:
        return ""
    try:
        checkpoints = os.stat(name + "/checkpoints", dir_fd=folder).st_mtime_ns
    except OSError:
        checkpoints = 0
    return f"{events.st_size},{events.st_mtime_ns},{run.st_mtime_ns},{checkpoints}"


def look(path: str) -> RunFiles | None:
    """The run directory at `path` looked at once (None: not a run, or not yet: no run.json)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        return _look(fd)
    finally:
        os.close(fd)


def _look(fd: int) -> RunFiles | None:
    folder = os.fstat(fd)
    names: set[str] = set()
    size, events, checkpoints = 0, None, 0
    for entry in _entries(fd):
        names.add(entry.name)
        size += _bytes_of(entry, fd)
        with contextlib.suppress(OSError):
            if entry.name == EVENTS:
                events = entry.stat()  # (as `os.stat`: through a link)
            elif entry.name == CHECKPOINTS:
                checkpoints = entry.stat().st_mtime_ns
    if INFO not in names:
        return None  # (as `index._derived`: a directory being created)
    log_key = f"{events.st_size},{events.st_mtime_ns}" if events is not None else ""
    key = f"{log_key},{folder.st_mtime_ns},{checkpoints}" if log_key else ""
    return RunFiles(key, log_key, size, _read(fd, INFO), _read(fd, META) if META in names else None,
                    _read(fd, CONFIG), _read(fd, SUMMARY) if SUMMARY in names else None)


def _entries(fd: int) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(fd) as found:
            return list(found)
    except OSError:
        return []


def _bytes_of(entry: os.DirEntry[str], parent: int) -> int:
    """The bytes under one entry, as `os.walk` sees them: a file's (a link's own size), a directory's
    files' (a link to a directory neither counted nor followed)."""
    try:
        if not entry.is_dir():
            return entry.stat(follow_symlinks=False).st_size
        if entry.is_symlink():
            return 0
        fd = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=parent)
    except OSError:
        return 0
    try:
        return sum(_bytes_of(child, fd) for child in _entries(fd))
    finally:
        os.close(fd)


def _read(parent: int, name: str) -> bytes | None:
    try:
        fd = os.open(name, os.O_RDONLY, dir_fd=parent)
    except OSError:
        return None
    try:
        chunks = [os.read(fd, READ)]
        while len(chunks[-1]) == READ:  # (a shorter read of a regular file is its end: one read a file)
            chunks.append(os.read(fd, READ))
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def loads(data: bytes | None) -> Any:
    """JSON bytes decoded (orjson's speed where it reads them; the stdlib's NaN where it does not); None
    for no bytes or bytes that are not JSON."""
    if not data:
        return None
    try:
        return decode(data)
    except ValueError:
        return None


def loads_dict(data: bytes | None) -> dict[str, Any]:
    """`loads`, a dict or {} (as `RunDir.read_info` and `meta.read_meta` read run.json and meta.json)."""
    found = loads(data)
    return found if isinstance(found, dict) else {}
