"""A thread that polls the files a script writes for new metrics (the structured logs' readers share it).

Each poll stats before it reads: a file whose size and modification time did not change costs one
`stat`. `finish()` asks for a last poll, for what the script wrote just before it exited.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

POLL_S = 1.0


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
