"""The home's change journal (`changes.log`, stdlib only): one line per run whose tags, note, checkpoints or
place (trash) were changed from outside the run, its id, appended by the control layer after the change.

A console reads what was appended since its last look (one `stat` when nothing was), so a change made by
the CLI or another console to any of 100,000 runs shows within a look. The journal is a hint, never a
record: a line lost to a rotation or a crash costs only latency, since the views still look at every run
in turn. It stays small: past MAX_BYTES the writer replaces it with an empty file, which a reader sees as
a new inode and reads from its start.
"""

from __future__ import annotations

import os
from pathlib import Path

CHANGES = "changes.log"
MAX_BYTES = 256 * 1024


def note_changed(home: Path, run_ids: list[str]) -> None:
    """Append the runs' ids to the home's journal (never raises: the change itself is already made)."""
    if not run_ids:
        return
    path = os.fspath(Path(home) / CHANGES)
    data = "".join(f"{run_id}\n" for run_id in run_ids).encode()
    try:
        if os.stat(path).st_size > MAX_BYTES:
            _start_afresh(path)
    except OSError:
        pass
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, data)  # one write of whole lines with O_APPEND: writers never interleave a line
        finally:
            os.close(fd)
    except OSError:
        pass


def _start_afresh(path: str) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb"):
        pass
    os.replace(tmp, path)


class ChangeFeed:
    """What was appended to a home's journal since the last `read` (changes from before the feed was made
    do not count: whoever makes one reads every run then)."""

    def __init__(self, home: Path) -> None:
        self.path = os.fspath(Path(home) / CHANGES)
        self._inode, self._offset = self._where()

    def _where(self) -> tuple[int, int]:
        try:
            st = os.stat(self.path)
        except OSError:
            return 0, 0
        return st.st_ino, st.st_size

    def read(self) -> list[str]:
        """The ids appended since the last read, in order, each once."""
        inode, size = self._where()
        if inode != self._inode:  # made, or started afresh: all of the new file is news
            self._inode, self._offset = inode, 0
        if size <= self._offset:
            self._offset = min(self._offset, size)
            return []
        try:
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                data = f.read(size - self._offset)
        except OSError:
            return []
        whole = data[:data.rfind(b"\n") + 1]  # a line still being written waits for the next read
        self._offset += len(whole)
        ids = (line.strip().decode(errors="replace") for line in whole.splitlines())
        return list(dict.fromkeys(i for i in ids if i))
