"""A Python traceback in a script's stderr, turned into the cause and hint of a `failed` event (stdlib only).

The cause is the exception line that ends the last traceback, skipping the wrappers torch's elastic agent
raises around a failed rank (its own traceback comes after the rank's). Under torchrun the agent's "Root
Cause" block names the rank that failed first, its exit code and the signal that killed it: the cause is
then that rank's, with its own traceback's last line when it printed one (`[rank1]: ValueError: ...`; torch
prefixes a rank's traceback only once its process group is up), else the exception the probe saw end
that rank (`rank_errors`).
Everything is plain text (terminal escape codes out). Hints follow the built-in runs' (the one rule table,
troubles/explain.py), in its wording for a script rather than a run's config.
"""

from __future__ import annotations

import re
from collections import deque

from trainconsole.trainers.troubles.explain import CAUSE_LIMIT, script_hint

from .plain import plain

START = "Traceback (most recent call last):"
#: The exception line: the first unindented line after "Traceback ...", `[module.]Type[: message]`.
EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?(?P<type>[A-Za-z_]\w*)(?::|$)")
WRAPPERS = ("ChildFailedError", "SignalException")
#: torchrun prefixes each line of a rank's output with its rank.
RANK_PREFIX = re.compile(r"^\[(?:default|rank)(?P<rank>\d+)\]:\s?")
#: The agent's summary: `Root Cause (first observed failure):`, then `  rank      : 1 (local_rank: 1)`,
#: `  exitcode  : -9 (pid: 123)  (SIGKILL)`, `  traceback : Signal 9 (SIGKILL) received by PID 123`.
ROOT_START = "Root Cause"
ROOT_FIELD = re.compile(r"^\s+(?P<key>rank|exitcode|traceback)\s*:\s*(?P<value>.*?)\s*$")
SIGNAL = re.compile(r"\((?P<name>SIG[A-Z0-9]+)\)")
TAIL_LINES = 15


class TracebackWatch:
    """Fed stderr lines one at a time; remembers the last traceback and the exception that ended it."""

    def __init__(self) -> None:
        self.lines: deque[str] = deque(maxlen=TAIL_LINES)
        self.exception: str | None = None
        self.tail: list[str] = []
        self.in_traceback = False
        self.by_rank: dict[int, tuple[str, list[str]]] = {}  # each rank's last exception and traceback
        self.root: dict[str, str] | None = None  # the agent's root cause block, once it began
        self.rank_errors: dict[int, str] = {}  # each rank's exception as its own process saw it (the probe)

    def feed(self, line: str) -> None:
        """Take one line (without its newline)."""
        line = plain(line)
        prefix = RANK_PREFIX.match(line)
        line = line[prefix.end():] if prefix else line
        self._root(line)
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
        if match and (match["type"] not in WRAPPERS or self.exception is None):
            self.exception, self.tail = _cut(line.strip()), list(self.lines)
            if prefix:
                self.by_rank[int(prefix["rank"])] = (self.exception, self.tail)

    def _root(self, line: str) -> None:
        if line.startswith(ROOT_START):
            self.root = {}
            return
        field = ROOT_FIELD.match(line) if self.root is not None else None
        if field and field["key"] not in self.root:
            self.root[field["key"]] = field["value"]

    @property
    def cause(self) -> str | None:
        """The failure's cause: under torchrun the root cause's rank, exit code or signal and its
        traceback's last line; else the exception that ended the last traceback."""
        rank = self._root_rank()
        if rank is None:
            return self.exception
        exception = self.by_rank.get(rank, (None, []))[0] or self.rank_errors.get(rank)
        return _cut(f"rank {rank} {self._how()}" + (f": {exception}" if exception else ""))

    @property
    def traceback(self) -> str:
        """The last lines of the traceback that gave the cause (the root cause rank's, under torchrun)."""
        return "\n".join(self.by_rank.get(self._root_rank(), (None, self.tail))[1])  # type: ignore[arg-type]

    def _root_rank(self) -> int | None:
        number = re.match(r"\d+", (self.root or {}).get("rank", ""))
        return int(number[0]) if number else None

    def _how(self) -> str:
        root = self.root or {}
        code = (root.get("exitcode") or "?").split()[0]
        signal = SIGNAL.search(root.get("exitcode", "") + " " + root.get("traceback", ""))
        return f"was killed by {signal['name']} (exit code {code})" if signal else f"exited with code {code}"


def hint(cause: str) -> str:
    """A short hint for a cause line ('' when there is no good guess)."""
    return plain(script_hint(cause))


def _cut(text: str) -> str:
    return text if len(text) <= CAUSE_LIMIT else text[: CAUSE_LIMIT - 1] + "…"
