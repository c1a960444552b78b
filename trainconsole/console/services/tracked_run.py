"""One followed run, as the reader thread sees it: its log's tail first, new lines as they come, and its
history read in the background into a state of its own, handed over whole when it catches up.

A long log's history, once read, is kept beside it (`run_history`: the state as of an offset); the next
console takes that state and reads only the log after its offset (in the background, from the kept state,
where that is more than TAIL_MAX). A new point at or before the last one the history left out (a resumed
run replaying its steps) has the log read whole instead (`goes_back`). A long log followed to its end (its
history never read whole, so never kept) is kept at its end: the state handed to the app, which then holds
every event read, once the app has applied the final event (`_keep_ended`; only this thread reads it then).

Every byte is read: the live reading stops only at the last complete line, and a read that filled its
limit says so (`behind`), so the thread comes back at once for the rest.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trainconsole import protocol
from trainconsole.console.core.run_state import Event, Note, RunState, summarized
from trainconsole.console.core.run_update import RunUpdate
from trainconsole.protocol import RunDir
from trainconsole.protocol.events import parse_lines as parse
from trainconsole.protocol.lost import stderr_cause

from . import run_history

if TYPE_CHECKING:
    from trainconsole.protocol.index_file import Summary

#: The first read of a log: enough of its end for the row (status, epoch, latest metrics)...
TAIL = 256 << 10
#: ...grown up to this until it holds an `eval` or the run's `started`.
TAIL_MAX = 8 << 20
#: Bytes per read of new lines, and per slice of a history being read in the background.
CHUNK = 1 << 20


@dataclass
class Backfill:
    """A history being read from the log's start into a state of its own (the reader's until handed over)."""

    state: RunState
    offset: int = 0
    bad_lines: int = 0
    cut: float = -math.inf  # from a history (`run_history`): a step at or before this needs the whole log


class TrackedRun:
    """Where the reading of one run stands, and the facts last read from its run.json."""

    def __init__(self, run: RunDir) -> None:
        self.run = run
        self.offset = -1  # bytes of the log read live; -1: not read yet
        self.size = -1  # the log's size when the live reading last reached its end
        self.info_mtime = -1.0
        self.info: dict[str, Any] | None = None
        self.epochs: int | None = None
        self.alive: bool | None = None
        self.slurm_reason = ""  # why its Slurm job waits, while it does (`slurm_jobs.reason`)
        self.problem = ""
        self.bad_lines = 0
        self.backfill: Backfill | None = None
        self.summarized = False  # its row came from the run index; its log is read once it is wanted
        self.summarized_files = (-1, -1)  # its folder's mtime and log's size when summarized: a change
        # makes it read
        self.summarized_at = 0.0
        self.lost_for = -2.0  # the run.json mtime its process was last found gone at (-2: never)
        self.cut = -math.inf  # its state came from a history: a new step at or before this needs the log
        self.step: Any = None  # the run's step, as far as read (where an eval without one lands)
        # The state last handed to the app, while it holds every event read (not a tail's), which the app
        # applies the events read since to: at a long run's end, it is kept as its history (`_keep_ended`).
        self.handed: RunState | None = None
        self.ending: tuple[int, float] | None = None  # (the log's end, its final event's t) to keep at
        self.kept_at = -1  # the offset of the history last kept or read

    @property
    def seen(self) -> bool:
        """Its tail has been read, or its summary taken (the app has a row for it)."""
        return self.offset >= 0 or self.summarized

    def from_summary(self, summary: Summary) -> RunUpdate | None:
        """Take the row of an ended run from its index summary, its log unread (None: the summary cannot
        give the row its log would, so the log is read as any other)."""
        try:
            state = summarized(self.run.id, summary.row, summary.facts)
        except (ValueError, TypeError, AttributeError):  # a summary of another shape: read the log
            return None
        if state is None:
            return None
        size, _, folder, _ = summary.key.split(",")  # (`index.fingerprint`)
        self.summarized, self.summarized_files, self.alive = True, (int(folder), int(size)), False
        self.summarized_at = time.monotonic()
        return self.update(state=state)

    def unsummarize(self) -> None:
        """Read this run's log from now on (it is wanted, or its files changed): its run.json first."""
        self.summarized, self.offset, self.info_mtime = False, -1, -1.0
        self.alive = None

    def update(self, **news: Any) -> RunUpdate:
        """An update carrying the run's current facts and `news` (state, events, notes); the first one
        that finds its process gone (since run.json last changed) adds what a lost run's stderr said."""
        if self.alive is False and not self.summarized and self.lost_for != self.info_mtime:
            self.lost_for = self.info_mtime
            news["notes"] = [*news.get("notes", []), *lost_notes(self.run)]
        return RunUpdate(self.run.id, info=self.info, epochs=self.epochs, alive=self.alive,
                         problem=self.problem, slurm_reason=self.slurm_reason, **news)

    def fail(self, text: str) -> RunUpdate | None:
        """Note a problem reading the run (once per distinct problem)."""
        if text == self.problem:
            return None
        self.problem = text
        return self.update(notes=[Note(time.time(), "error", text)])

    def first_read(self) -> tuple[RunUpdate | None, int]:
        """Read the log's tail into a fresh state; the rest of it (if any) is left to `backfill_step`.
        A long log's history (`run_history`) stands for the log up to its offset.

        Returns the update and the bytes read."""
        self.cut = -math.inf
        try:
            size = os.stat(self.run.events).st_size
            kept = run_history.read(self.run, size) if size >= run_history.FROM_BYTES else None
            if kept is not None and size - kept.offset <= TAIL_MAX:  # the history, and the log since
                update = self._from_history(kept, size)
                if update is not None:
                    return update, size - kept.offset
                kept = None  # (the log goes back before what it kept whole)
            start, lines, end = _tail(self.run.events, size)
        except FileNotFoundError:
            size, start, lines, end, kept = 0, 0, [], 0, None
        except OSError as e:
            return self.fail(f"cannot read events.jsonl: {e.strerror}"), 0
        events, bad = parse(lines)
        state = _state(self.run.id, events)
        self.offset, self.size, self.bad_lines = end, size if end == size else -1, bad
        self.backfill = Backfill(RunState(self.run.id)) if start > 0 else None
        if kept is not None and start > kept.offset:  # the history, then the log from its offset on
            self.backfill = Backfill(kept.state, kept.offset, kept.bad_lines, kept.cut)
        self.handed, self.ending = (state if start == 0 else None), None
        return self.update(state=state, notes=self._bad_note(state, bad)), end - start

    def _from_history(self, kept: run_history.Kept, size: int) -> RunUpdate | None:
        """The state a history kept, with the lines the log has grown by since (None: one of them goes
        back before what the history kept whole; the log is read as if there were no history)."""
        lines, used, _ = read_lines(self.run.events, kept.offset, size - kept.offset)
        events, bad = parse(lines)
        if goes_back(events, kept.cut, kept.state.step)[0]:
            return None
        for event in events:
            kept.state.apply(event)
        self.offset = kept.offset + used
        self.size = size if self.offset == size else -1
        self.bad_lines, self.backfill = kept.bad_lines + bad, None
        self.cut, self.step = kept.cut, kept.state.step
        self.handed, self.ending, self.kept_at = kept.state, None, kept.offset
        if used >= run_history.FROM_BYTES:  # much since: keep the history up to date
            self._keep(kept.state)
        return self.update(state=kept.state, notes=self._bad_note(kept.state, self.bad_lines))

    def read_new(self) -> tuple[RunUpdate | None, bool]:
        """Read what the log grew by (up to CHUNK): the update (None if nothing), and whether more waits."""
        try:
            size = os.stat(self.run.events).st_size
        except FileNotFoundError:
            return None, False
        except OSError as e:
            return self.fail(f"cannot read events.jsonl: {e.strerror}"), False
        if size == self.size:
            if self.ending is not None:
                self._keep_ended(size)
            return None, False
        if size < self.offset:  # replaced or truncated: start over
            return self.first_read()[0], False
        try:
            lines, used, capped = read_lines(self.run.events, self.offset, CHUNK, size)
        except OSError as e:
            return self.fail(f"cannot read events.jsonl: {e.strerror}"), False
        self.offset += used
        self.size = -1 if capped else size
        if not lines:
            return None, capped
        events, bad = parse(lines)
        back, self.step = goes_back(events, self.cut, self.step)
        if back:  # a resumed run's replayed steps reach what the history left out
            return self.first_read()[0], False
        self.bad_lines += bad
        notes = self._bad_note(None, self.bad_lines) if bad else []
        self.ending = _ending(events, self.offset) if self.offset == size else None
        return self.update(events=events, notes=notes), capped

    def backfill_step(self, budget: int) -> tuple[RunUpdate | None, int]:
        """Read up to `budget` bytes more of the history; once it reaches the live reading, hand it over.

        Returns the update (only at the hand-over) and the bytes read."""
        b = self.backfill
        if b is None:
            return None, 0
        try:
            lines, used, _ = read_lines(self.run.events, b.offset, min(budget, self.offset - b.offset))
        except OSError as e:
            return self.fail(f"cannot read events.jsonl: {e.strerror}"), 0
        events, bad = parse(lines)
        if goes_back(events, b.cut, b.state.step)[0]:  # the history cannot take these: the whole log
            self.backfill = Backfill(RunState(self.run.id))
            return None, used
        for event in events:
            b.state.apply(event)
        b.offset, b.bad_lines = b.offset + used, b.bad_lines + bad
        if b.offset < self.offset:
            return None, used
        # Caught up: the state holds every event up to the live reading, so it replaces the tail's.
        self.backfill, self.bad_lines, self.cut, self.step = None, b.bad_lines, b.cut, b.state.step
        self.handed, self.ending = b.state, None
        if self.offset >= run_history.FROM_BYTES:  # kept: the next console reads it, not the whole log
            self._keep(b.state)
        return self.update(state=b.state, notes=self._bad_note(b.state, self.bad_lines)), used

    def _keep(self, state: RunState) -> None:
        """Keep `state`, that of the log's first `self.offset` bytes, as the run's history."""
        if run_history.write(self.run, state, self.offset, self.bad_lines):
            self.kept_at = self.offset

    def _keep_ended(self, size: int) -> None:
        """A long log that ended while followed (the history was not kept as it was read): keep the
        state the app holds as its history, once the app has applied the final event and nothing came
        after it (the log still ends there). Its events are all applied by then: the app applies them in
        the order they were read, and only this thread hands it more."""
        assert self.ending is not None
        end, t = self.ending
        state = self.handed
        if (state is None or self.backfill is not None or self.summarized or end != self.offset
                or end != size or end < run_history.FROM_BYTES or end == self.kept_at
                or self.bad_lines or self.problem):  # (notes the app's state holds and a replay's not)
            self.ending = None
            return
        if state.final is None or state.final_t != t:  # (not applied yet: the next pass looks again)
            return
        self.ending = None
        try:
            self._keep(state)
        except RuntimeError:  # (the app changed its notes meanwhile: the next pass tries again)
            self.ending = (end, t)

    def _bad_note(self, state: RunState | None, bad: int) -> list[Note]:
        if not bad:
            return []
        t = (state.t_last if state is not None else None) or time.time()
        return [Note(t, "warning", f"skipped {bad} unreadable line(s) in events.jsonl")]


def goes_back(events: list[Event], cut: float, step: Any) -> tuple[bool, Any]:
    """Whether a point of `events` lands at or before `cut` (a step replayed from a checkpoint, an eval
    placed there: it would need the points a history left out), and the run's step after them (`step`:
    its step before them, which places an eval without its own, as `RunState` places it)."""
    if cut == -math.inf:  # (no history: nothing to check)
        return False, step
    for e in events:
        kind, at = e.get("type"), e.get("step")
        if kind == "step":
            x, step = at, at if at is not None else step
        elif kind == "eval":
            x = at if "step" in e else step if step is not None else e.get("epoch")
        else:
            continue
        if isinstance(x, (int, float)) and not isinstance(x, bool) and x <= cut:
            return True, step
    return False, step


def _ending(events: list[Event], end: int) -> tuple[int, float] | None:
    """(end, the final event's t) where the last of `events` is how the run ended (a final event with a
    time), else None."""
    last = events[-1] if events else {}
    t = last.get("t")
    if last.get("type") in protocol.FINAL and isinstance(t, (int, float)) and not isinstance(t, bool):
        return end, float(t)
    return None


def _state(run_id: str, events: list[Event]) -> RunState:
    state = RunState(run_id)
    for event in events:
        state.apply(event)
    return state


def _tail(path: os.PathLike[str], size: int) -> tuple[int, list[bytes], int]:
    """The complete lines at the end of a log: (where they start, the lines, where they end).

    Starts TAIL bytes from the end and doubles that until the tail holds an `eval` or a `started`
    event (or TAIL_MAX, or the whole log), so the row has the latest accuracy and the run's start."""
    want = TAIL
    while True:
        start = max(0, size - want)
        with open(path, "rb") as f:
            f.seek(max(0, start - 1))
            data = f.read(size - max(0, start - 1))
        if start > 0:  # the byte before `start` tells whether the first line is whole
            cut = data.find(b"\n") + 1
            start, data = start - 1 + cut, data[cut:]
        end = data.rfind(b"\n") + 1
        body = data[:end]
        if start == 0 or want >= TAIL_MAX or b'"eval"' in body or b'"started"' in body:
            return start, [line for line in body.split(b"\n") if line], start + end
        want *= 4


def read_lines(path: os.PathLike[str], offset: int, limit: int,
               size: int | None = None) -> tuple[list[bytes], int, bool]:
    """The complete lines in `limit` bytes from `offset`: (lines, bytes they take, whether it was capped);
    with the log's `size` as last stat'ed, no further than it (what was appended since is read next time).

    A single line longer than `limit` is read whole, however long. Three system calls (an open file object
    took eleven, each one a turn of the GIL for the live reads of every run, 30 times a second: issue 47)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        data = _pread(fd, limit if size is None else max(0, min(limit, size - offset)), offset)
        capped = len(data) == limit > 0
        while capped and b"\n" not in data:
            more = _pread(fd, limit, offset + len(data))
            data += more
            capped = len(more) == limit
    finally:
        os.close(fd)
    end = data.rfind(b"\n") + 1
    return [line for line in data[:end].split(b"\n") if line], end, capped


def _pread(fd: int, n: int, offset: int) -> bytes:
    """Up to `n` bytes at `offset`, fewer only at the end of the file."""
    chunks, got = [], 0
    while got < n:
        chunk = os.pread(fd, n - got, offset + got)
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def lost_notes(run: RunDir) -> list[Note]:
    """For a run whose process is gone without a final event: its stderr's last words, the likeliest
    cause (none when it ended properly or said nothing)."""
    if protocol.last_final(protocol.tail(run.events))[0] is not None:
        return []
    cause = stderr_cause(run.path)
    return [Note(time.time(), "error", f"its stderr ends: {cause}")] if cause else []
