"""A thread that polls the files a script writes for new metrics (the structured logs' readers share it).

Each poll stats before it reads: a file whose size and modification time did not change costs one
`stat`, and a folder listed before is listed again only once its modification time changed (a file or
folder was added or removed in it). `finish()` asks for a last poll, for what the script wrote just
before it exited.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

POLL_S = 1.0
#: A folder changed this recently may change again within its timestamp's granularity: listed each poll.
SETTLE_S = 2.0


class FileTail(threading.Thread):
    """Calls `poll()` every POLL_S seconds until `finish()`, then once more."""

    def __init__(self, name: str) -> None:
        super().__init__(daemon=True, name=name)
        self.done = threading.Event()

    def run(self) -> None:
        """Poll until finished, then once more for what was written last."""
        while not self.done.wait(POLL_S):
            self.poll()
        self.poll()
        self.flush()

    def finish(self, timeout: float = 5.0) -> None:
        """Stop polling after a last read."""
        self.done.set()
        self.join(timeout)

    def poll(self) -> None:
        """Read what the files grew by and emit it."""
        raise NotImplementedError

    def flush(self) -> None:
        """Emit what waits for more (the script has ended: nothing more will come)."""


def signature(path: Path) -> tuple[int, float] | None:
    """A file's size and modification time (None if it is gone): what changes when it was written."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime


def read_from(path: Path, offset: int) -> bytes:
    """The file's bytes from OFFSET on (empty if it cannot be read)."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read()
    except OSError:
        return b""


def complete_lines(data: bytes) -> tuple[list[str], int]:
    """The whole lines in DATA (a last line without its newline is still being written) and how many
    bytes they take."""
    end = data.rfind(b"\n") + 1
    return data[:end].decode("utf-8", "replace").splitlines(), end


class Listings:
    """Folders' entries (sub-folders, files), listed again only when a folder's modification time moved."""

    def __init__(self) -> None:
        self.cache: dict[str, tuple[int, list[str], list[str]]] = {}

    def entries(self, folder: str) -> tuple[list[str], list[str]]:
        """The paths of FOLDER's sub-folders and files (none if it is gone)."""
        try:
            mtime = os.stat(folder).st_mtime_ns
        except OSError:
            self.cache.pop(folder, None)
            return [], []
        cached = self.cache.get(folder)
        if cached is not None and cached[0] == mtime:
            return cached[1], cached[2]
        dirs, files = [], []
        try:
            for entry in os.scandir(folder):
                (dirs if entry.is_dir(follow_symlinks=False) else files).append(entry.path)
        except OSError:
            return [], []
        if time.time() - mtime / 1e9 > SETTLE_S:
            self.cache[folder] = (mtime, dirs, files)
        return dirs, files

    def files(self, folder: str, name: str | None = None) -> list[str]:
        """Every file under FOLDER (named NAME, if given), at any depth."""
        found, stack = [], [folder]
        while stack:
            dirs, files = self.entries(stack.pop())
            stack += dirs
            found += [f for f in files if name is None or os.path.basename(f) == name]
        return found
