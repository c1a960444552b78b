"""Which entries of the run index still hold, and which of them a filter wants (stdlib only).

A listing stats every indexed run (`index.fingerprint`: three `stat`s a run) and, under `ls --filter`,
tests it: about 10 µs a run here, a second for 100,000 runs. A big home's check is shared with one
forked process (a process with no threads only: a fork copies the locks other threads hold), which
judges the second half and hands back one byte a run; a process that fails to hand back its share
leaves it to be judged here.
"""

from __future__ import annotations

import contextlib
import gc
import os
import threading
from collections.abc import Callable, Sequence

from .index_file import Summary
from .run_files import fingerprint, fingerprint_at

#: Entries a listing judges in one process before it shares the check with a second (~0.1 s of work).
SHARE_FROM = 10_000
#: A verdict: the entry no longer holds (its run is derived again), holds, holds and the filter wants it.
STALE, HOLDS, WANTED = 0, 1, 2


def verdicts(paths: Sequence[str], keys: Sequence[str | None],
             wanted: Callable[[Summary], bool] | None = None,
             entry: Callable[[int], Summary] | None = None) -> bytes:
    """One verdict per run (`paths[i]`, the fingerprint its index entry holds `keys[i]`, None: no entry):
    STALE, HOLDS or WANTED (WANTED only where `wanted` is given and wants the entry, `entry(i)`; where it
    is not given, every entry that holds)."""
    n = len(paths)
    if n < SHARE_FROM or (os.cpu_count() or 1) < 2 or threading.active_count() > 1:
        return bytes(judge(paths, keys, wanted, entry))
    half = n // 2
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: judge the second half, hand back its verdicts, and leave at once
        code = 1
        try:
            os.close(read)
            gc.disable()  # (a collection would touch, and so copy, every object the parent holds)
            theirs = judge(paths[half:], keys[half:], wanted, entry and (lambda i: entry(half + i)))
            _write_all(write, bytes(theirs))
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    mine = judge(paths[:half], keys[:half], wanted, entry)
    theirs = _read_all(read)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
    if len(theirs) != n - half:  # the child failed: its share is judged here
        return bytes(mine + judge(paths[half:], keys[half:], wanted, entry and (lambda i: entry(half + i))))
    return bytes(mine + theirs)


def judge(paths: Sequence[str], keys: Sequence[str | None],
          wanted: Callable[[Summary], bool] | None = None,
          entry: Callable[[int], Summary] | None = None) -> bytearray:
    """`verdicts`, in this process. (Verdicts as bytes: 100,000 of them handed back and joined.)"""
    out = bytearray(len(paths))  # (STALE until judged)
    folder, fd = "", -1
    try:
        for i, (path, held) in enumerate(zip(paths, keys, strict=True)):
            if not held:
                continue
            parent, _, name = path.rpartition("/")
            if parent != folder:  # (a listing's runs share one folder: each is stat-ed from it)
                fd = _reopen(fd, parent)
                folder = parent
            if held == (fingerprint_at(fd, name) if fd >= 0 else fingerprint(path)):
                out[i] = WANTED if wanted is None or entry is None or wanted(entry(i)) else HOLDS
    finally:
        if fd >= 0:
            os.close(fd)
    return out


def _reopen(fd: int, folder: str) -> int:
    if fd >= 0:
        os.close(fd)
    try:
        return os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return -1


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.close(fd)


def _read_all(fd: int) -> bytes:
    chunks = []
    with contextlib.suppress(OSError):
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)
