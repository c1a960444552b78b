"""A Python traceback in a script's stderr, turned into the cause and hint of a `failed` event (stdlib only).

The cause is the exception line that ends the last traceback, skipping the wrappers torch's elastic agent
raises around a failed rank (its own traceback comes after the rank's). Hints follow the built-in runs'
(the one rule table, troubles/explain.py), in its wording for a script rather than a run's config.
"""

from __future__ import annotations

import re
from collections import deque

from trainers.troubles.explain import CAUSE_LIMIT, script_hint

START = "Traceback (most recent call last):"
#: The exception line: the first unindented line after "Traceback ...", `[module.]Type[: message]`.
EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?(?P<type>[A-Za-z_]\w*)(?::|$)")
WRAPPERS = ("ChildFailedError", "SignalException")
#: torchrun prefixes each line of a rank's output with its rank.
RANK_PREFIX = re.compile(r"^\[(?:default)?rank\d+\]:\s?")
TAIL_LINES = 15

class TracebackWatch:
    """Fed stderr lines one at a time; remembers the last traceback and the exception that ended it."""

    def __init__(self) -> None:
        self.lines: deque[str] = deque(maxlen=TAIL_LINES)
        self.cause: str | None = None
        self.tail: list[str] = []
        self.in_traceback = False

    def feed(self, line: str) -> None:
        """Take one line (without its newline)."""
        line = RANK_PREFIX.sub("", line)
        if line.startswith(START):
            self.in_traceback = True
            self.lines.clear()
        if not self.in_traceback:
            return
        self.lines.append(line)
        if line.startswith((START, " ", "\t")) or not line.strip():
            return
        self.in_traceback = False
        match = EXCEPTION_LINE.match(line)
        if match and (match["type"] not in WRAPPERS or self.cause is None):
            self.cause, self.tail = _cut(line.strip()), list(self.lines)

    @property
    def traceback(self) -> str:
        """The last lines of the traceback that gave the cause."""
        return "\n".join(self.tail)


def hint(cause: str) -> str:
    """A short hint for a cause line ('' when there is no good guess)."""
    return script_hint(cause)


def _cut(text: str) -> str:
    return text if len(text) <= CAUSE_LIMIT else text[: CAUSE_LIMIT - 1] + "…"
