"""A script's output pipes: copied to the run's logs as they are flushed, and handed over line by line.

`Pump` is a plain thread per pipe (stdout, stderr): it writes each chunk to its log at once and hands the
lines (a `\\r`, tqdm's refresh, ends a state of the line; `\\n` ends the line) to a reader
(`output.OutputEvents`). Everything happens outside the script's process, so the script runs at full
speed (it only blocks if the pipe fills, i.e. if we fall behind).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable

CHUNK = 1 << 16
#: A "line" longer than this without a newline is handed over in parts, each a line.
MAX_LINE = 1 << 16
LINE_END = re.compile(rb"[\r\n]")
#: Where a key may begin (as `lines.KEY_VALUE` reads keys): a long line is cut before one.
WORD_START = re.compile(rb"(?<![\w./-])[A-Za-z]")
NUMBER_TAIL = b"0123456789.eE+-"


class Pump(threading.Thread):
    """Copies one pipe to a log descriptor and hands each line to `on_line(text, final)`.

    A `\r` (tqdm's refresh) ends a state of the line, not the line: every state is handed over with
    `final` False, and the text before the `\n` with `final` True. A line longer than MAX_LINE is handed
    over in parts, each a line of its own, cut before a key, never between a key and its value or inside a
    number.
    """

    def __init__(self, pipe_fd: int, log_fd: int, on_line: Callable[[str, bool], None]) -> None:
        super().__init__(daemon=True, name=f"pump-{pipe_fd}")
        self.pipe_fd, self.log_fd, self.on_line = pipe_fd, log_fd, on_line

    def run(self) -> None:
        """Until the pipe closes: copy, split, hand over."""
        pending = b""
        while chunk := _read(self.pipe_fd):
            _write_all(self.log_fd, chunk)
            pending += chunk
            start = 0
            for end in LINE_END.finditer(pending):
                self._hand(pending[start:end.start()], final=end.group() == b"\n")
                start = end.end()
            pending = pending[start:]
            while len(pending) > MAX_LINE:
                cut = _cut(pending)
                self._hand(pending[:cut], final=True)  # a part, not a state: its metrics count
                pending = pending[cut:]
        self._hand(pending, final=True)

    def _hand(self, line: bytes, final: bool) -> None:
        if line or final:
            self.on_line(line.decode(errors="replace"), final)


def _cut(text: bytes) -> int:
    """Where to cut a line longer than MAX_LINE: before the last key that begins before the limit; without
    one, before the number the limit falls in; else at the limit."""
    starts = [m.start() for m in WORD_START.finditer(text, 1, MAX_LINE)]
    if starts:
        return starts[-1]
    return len(text[:MAX_LINE].rstrip(NUMBER_TAIL)) or MAX_LINE


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, CHUNK)
    except OSError:
        return b""


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view):]
        except OSError:
            return  # the log is gone (disk full, deleted): keep reading, or the script blocks
