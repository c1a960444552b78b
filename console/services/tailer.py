"""A plain reader thread that follows every run's event log and applies new events to the board.

Toolong-style: no UI code; it stats each `events.jsonl`, reads only what grew (an `EventReader` offset per
run, half-written last lines left for later), parses outside the lock, applies under it, and posts one
`RunsChanged` message that coalesces with any still in the app's queue. Hundreds of idle runs cost one
`stat` each per poll.
"""

from __future__ import annotations

import json
import os
import threading
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from textual.message import Message

from console.state import Board, Note
from trainers.protocol import Event, EventReader, RunDir

from . import runs

CHUNK = 4 << 20  # bytes per run per poll, so one huge log cannot starve the others
LAUNCH_GRACE_S = 10.0


class RunsChanged(Message):
    """Runs changed: new events, run.json, liveness or problems. Read `Board.take_dirty()`."""

    def can_replace(self, message: Message) -> bool:
        """A newer one says all an older one did: the board keeps the dirty set."""
        return isinstance(message, RunsChanged)


@dataclass
class Tracked:
    """One followed run: where its reader stands and what we last saw of its files."""

    run: RunDir
    reader: EventReader
    size: int = -1
    info_mtime: float = -1.0
    info: dict[str, Any] = field(default_factory=dict)
    bad_lines: int = 0


class Tailer:
    """Follows every run under `root/runs` from a daemon thread and keeps `board` up to date."""

    def __init__(self, root: Path, board: Board, notify: Callable[[], None], poll: float = 0.025,
                 scan_every: float = 1.0, on_error: Callable[[str], None] = lambda text: None) -> None:
        self.root, self.board, self.notify, self.on_error = Path(root), board, notify, on_error
        self.poll, self.scan_every = poll, scan_every
        self.lock = threading.RLock()
        self.loaded = threading.Event()  # set once every run's history has been read
        self.tracked: dict[str, Tracked] = {}
        self._wake, self._stop = threading.Event(), threading.Event()
        self._next_scan = 0.0
        self._thread = threading.Thread(target=self._loop, name="trainconsole-tailer", daemon=True)

    def start(self) -> None:
        """Start following."""
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread and wait briefly for it."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=1.0)

    def poke(self) -> None:
        """Look for new runs and read their state now (after a launch, stop or kill)."""
        self._next_scan = 0.0
        self._wake.set()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                changed, behind = self.poll_once()
            except Exception as e:  # the thread must outlive anything a run directory can do to it
                self.on_error(f"reading runs failed ({type(e).__name__}: {e}); still trying")
                self._stop.wait(1.0)
                continue
            if changed:
                self.notify()
            if not behind:
                self.loaded.set()
                self._wake.wait(self.poll)
                self._wake.clear()

    def poll_once(self) -> tuple[bool, bool]:
        """One pass: scan for runs (every `scan_every` s), read grown logs. Returns (changed, behind)."""
        changed = behind = False
        full = time.monotonic() >= self._next_scan
        if full:
            self._next_scan = time.monotonic() + self.scan_every
            changed = self._scan()
        for tracked in list(self.tracked.values()):
            grew, more = self._read(tracked)
            changed, behind = changed or grew, behind or more
        if full:
            changed = self._refresh(list(self.tracked.values())) or changed
        return changed, behind

    def _scan(self) -> bool:
        try:
            entries = sorted((e for e in os.scandir(self.root / "runs") if e.is_dir()), key=lambda e: e.name)
        except OSError:
            return False
        seen = {e.name for e in entries}
        gone = [rid for rid in self.tracked if rid not in seen]
        for rid in gone:
            del self.tracked[rid]
            with self.lock:
                self.board.forget(rid)
        for entry in reversed(entries):  # newest first: what the table shows first fills in first
            if entry.name not in self.tracked:
                self._track(RunDir(entry.path))
        return bool(gone)

    def _track(self, run: RunDir) -> None:
        try:
            os.stat(run.info_path)
        except FileNotFoundError:
            return  # being created: run.json comes next
        except OSError as e:
            self._problem(run.id, f"cannot read run directory: {e.strerror}")
        self.tracked[run.id] = Tracked(run, EventReader(run.events))

    def _read(self, t: Tracked) -> tuple[bool, bool]:
        """Read what a log grew by; returns (applied any, still behind)."""
        try:
            size = os.stat(t.run.events).st_size
        except FileNotFoundError:
            return False, False
        except OSError as e:
            return self._problem(t.run.id, f"cannot read events.jsonl: {e.strerror}"), False
        if size == t.size:
            return False, False
        if size < t.reader.offset:  # replaced or truncated: start over
            t.reader = EventReader(t.run.events)
            with self.lock:
                self.board.forget(t.run.id)
            t.info_mtime = -1.0
        try:
            events, bad = parse(t.reader.read_lines(CHUNK))
        except OSError as e:
            return self._problem(t.run.id, f"cannot read events.jsonl: {e.strerror}"), False
        behind = t.reader.offset < size and size - t.reader.offset >= CHUNK // 2
        t.size = -1 if behind else size
        with self.lock:
            n = self.board.apply(t.run.id, events)
            if bad:
                t.bad_lines += bad
                state = self.board.get(t.run.id)
                text = f"skipped {t.bad_lines} unreadable line(s) in events.jsonl"
                state.notes.append(Note(state.t_last or time.time(), "warning", text))
                self.board.mark(t.run.id)
        return n > 0, behind

    def _refresh(self, tracked: list[Tracked]) -> bool:
        """Re-read changed run.json files and check which unfinished runs are still alive."""
        changed = False
        for t in tracked:
            info_changed = self._refresh_info(t)
            with self.lock:
                state = self.board.get(t.run.id)
                check = info_changed or state.final is None or state.alive is not False
            if not check:
                continue
            # launch() writes run.json just before it starts the process: give it a moment.
            launching = not t.info.get("pid") and time.time() - t.info_mtime < LAUNCH_GRACE_S
            alive = None if launching else runs.leader(t.run, t.info) is not None
            if alive != state.alive:
                with self.lock:
                    state.alive = alive
                    self.board.mark(t.run.id)
                changed = True
        return changed or False

    def _refresh_info(self, t: Tracked) -> bool:
        try:
            mtime = os.stat(t.run.info_path).st_mtime
        except OSError:
            return False
        if mtime == t.info_mtime:
            return False
        t.info_mtime, t.info = mtime, t.run.read_info()
        epochs = _epochs(t.run) if t.info else None
        with self.lock:
            self.board.get(t.run.id).set_info(t.info, epochs)
            self.board.mark(t.run.id)
        return True

    def _problem(self, run_id: str, text: str) -> bool:
        with self.lock:
            run = self.board.get(run_id)
            if run.problem == text:
                return False
            run.problem = text
            run.notes.append(Note(run.t_last or time.time(), "error", text))
            self.board.mark(run_id)
        return True


def parse(lines: list[bytes]) -> tuple[list[Event], int]:
    """Events from raw log lines, and how many lines were not events.

    One `json.loads` over the whole batch is twice as fast as one per line; a garbled line sends the
    batch down the slow path, line by line.
    """
    try:
        batch = json.loads(b"[" + b",".join(lines) + b"]")
    except ValueError:
        batch = [_loads(line) for line in lines]
    events = [e for e in batch if isinstance(e, dict) and "type" in e]
    return events, len(batch) - len(events)


def _loads(line: bytes) -> object:
    try:
        return json.loads(line)
    except ValueError:
        return None


def _epochs(run: RunDir) -> int | None:
    try:
        with open(run.config, "rb") as f:
            epochs = tomllib.load(f).get("train", {}).get("epochs")
    except (OSError, tomllib.TOMLDecodeError):
        return None
    return epochs if isinstance(epochs, int) else None
