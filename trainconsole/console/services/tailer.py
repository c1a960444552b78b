"""A plain reader thread that follows every run's event log and hands what it reads to the app in messages.

Toolong-style: no UI code, and nothing shared. The thread owns its reading (`TrackedRun`s: offsets, the
states it builds); the app owns the `Board` and applies the `RunUpdate`s that `RunsRead` messages carry.
At most one `RunsRead` is in the app's queue at a time: what the thread reads meanwhile is merged into the
next one (coalescing), and while the app is behind by MAX_PENDING events the thread stops reading
(back-pressure), so a slow screen costs latency, never unbounded memory.

An ended run whose run index summary is still good (`trainconsole.protocol.index`: its fingerprint
matches) gets its row from that summary at start, its log unread; its log is read once the app wants it
(`want`: selected, marked, compared) or its files change. Any other new run's log is read from its end
first (the row is right at once), then its history from the start in slices, in a state of its own that
replaces the tail's when it catches up. Hundreds of idle runs cost one `stat` each per poll; a
summarized one, two per scan.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from textual.message import Message

from trainconsole.console.core.run_state import PLACE_FINALS
from trainconsole.console.core.run_update import RunUpdate, count_events, merge
from trainconsole.protocol import FINAL, RunDir, in_queue, places

from .tracked_run import CHUNK, TrackedRun

if TYPE_CHECKING:
    from trainconsole.protocol.index_file import Summary

#: Bytes of first tails and background history read per pass, so live runs stay live during a reattach.
BUDGET = 4 * CHUNK
#: Events waiting for the app beyond which the thread stops reading until the app has taken them.
MAX_PENDING = 200_000
LAUNCH_GRACE_S = 10.0
#: How often the live runs' logs are read: an event's wait before the frame that shows it, which is drawn as
#: soon as the read is taken (frames.py: FRAME_S apart). Read at the frames' own pace, an event waits for
#: one or the other, not for both (15 ms reads, woken after each message too, left a frame up to 30 ms
#: behind each read: benchmarks/console_live.py, issue 47).
POLL_S = 0.03
#: After new runs' rows go out, their histories wait this long: the rows are drawn before they compete.
HOLD_S = 0.3
#: Summarized runs whose files are checked for a change per scan (all of them, in turn).
CHECKS = 1000
#: Rows from the run index in the first message (the newest: a screenful and more); the rest follow at once.
FIRST_ROWS = 200
#: The statuses final events give (what a place's `final_status` is asked about).
FINALS = tuple(sorted(set(FINAL.values())))
#: The key, in a place's own facts the reader hands over (run.json `slurm`), of what its place says now.
LIVE = "live"


class RunsRead(Message):
    """The reader's news: one update per changed run, and whether every run's history has been read."""

    def __init__(self, updates: dict[str, RunUpdate], loaded: bool) -> None:
        super().__init__()
        self.updates, self.loaded = updates, loaded


class Tailer:
    """Follows every run under `root/runs` from a daemon thread and posts `RunsRead` messages."""

    def __init__(self, root: os.PathLike[str], post: Callable[[RunsRead], object], poll: float | None = None,
                 scan_every: float = 1.0, on_error: Callable[[str], None] = lambda text: None,
                 hold: float = HOLD_S) -> None:
        self.root, self.post, self.on_error = os.fspath(root), post, on_error
        self.poll, self.scan_every, self.hold = POLL_S if poll is None else poll, scan_every, hold
        self._hold_until = 0.0
        self.loaded = threading.Event()  # set once every run's history has been read and posted
        self.tracked: dict[str, TrackedRun] = {}  # every run
        self.following: dict[str, TrackedRun] = {}  # those whose logs are read (not summarized)
        self._checked = 0  # where the next scan's check of summarized runs starts
        self._pending: dict[str, RunUpdate] = {}
        self._in_flight, self._announced = threading.Event(), False
        self._held = threading.Event()  # something read waits for the message in flight to be taken
        self._wake, self._stop = threading.Event(), threading.Event()
        self._next_scan = 0.0
        self._index: dict[str, Summary] | None = None  # the run index, read at the first scan only
        self._from_index: dict[str, tuple[str, Summary]] = {}  # runs to take from it (path, summary)
        self._first_rows = True
        self._wanted: set[str] = set()  # summarized runs whose logs the app wants read (`want`)
        self._wanted_lock = threading.Lock()
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

    def want(self, run_ids: list[str]) -> None:
        """Read these runs' logs (their histories: a plot, compare) though their rows came from the index
        (called on the app's thread)."""
        with self._wanted_lock:
            self._wanted.update(run_ids)
        self._wake.set()

    def taken(self) -> None:
        """The app has applied the last `RunsRead`: the next may go (called on the app's thread), at once if
        something read waits for it, else at the next poll (waking the thread after every message read the
        logs twice as often as POLL_S, each read a few milliseconds' events: CPU, and frames out of step)."""
        self._in_flight.clear()
        if self._held.is_set():
            self._wake.set()

    def _loop(self) -> None:
        while not self._stop.is_set():
            behind = False
            try:
                if count_events(self._pending) < MAX_PENDING:
                    behind = self.poll_once()[1]
                else:
                    self._send([], loaded=False)
            except Exception as e:  # the thread must outlive anything a run directory can do to it
                self.on_error(f"reading runs failed ({type(e).__name__}: {e}); still trying")
                self._stop.wait(1.0)
                continue
            if not behind:
                self._wake.wait(self.poll)
                self._wake.clear()

    def poll_once(self) -> tuple[bool, bool]:
        """One pass: read what grew, scan for runs and re-read run.json (every `scan_every` s; what grew is
        posted first), first tails and a slice of history, and post what changed. Returns (changed, still
        behind)."""
        news: list[RunUpdate | None] = []
        self._take_wanted()
        behind = self._read_live(news)
        early = [u for u in news if u is not None]
        # What the live runs wrote goes out before a scan's work: the scan (each run's run.json and process)
        # held it up 5-15 ms once a second, the live lag's p99 at 10,000 events/s (issue 47).
        if time.monotonic() >= self._next_scan:
            self._send(early, loaded=False)
            news = []
            self._next_scan = time.monotonic() + self.scan_every
            news += self._scan()
            news += [self._refresh(t) for t in list(self.following.values())]
            self._check_summarized()
        else:
            early = []
        behind = self._take_summaries(news) or behind
        behind = self._read_history(news, BUDGET) or behind
        changed = [u for u in news if u is not None]
        pending = bool(self._from_index) or any(
            not t.seen or t.backfill is not None for t in self.following.values())
        self._send(changed, loaded=not (behind or pending))
        return bool(changed or early), behind

    def _send(self, news: list[RunUpdate], loaded: bool) -> None:
        """Merge into what waits for the app, and post it unless a message is still in the app's queue."""
        merge(self._pending, news)
        fresh = loaded and not self._announced
        if self._pending or fresh:
            self._held.set()  # (before the check: a `taken` in between then still wakes the thread)
        if (self._pending or fresh) and not self._in_flight.is_set():
            self._held.clear()
            self._in_flight.set()
            updates, self._pending = self._pending, {}
            self._announced = self._announced or loaded
            self.post(RunsRead(updates, loaded))
        if loaded and not self._pending:
            self.loaded.set()

    def _scan(self) -> list[RunUpdate]:
        try:
            entries = sorted((e for e in os.scandir(os.path.join(self.root, "runs")) if e.is_dir()),
                             key=lambda e: e.name)
        except OSError:
            return []
        seen = {e.name for e in entries}
        gone = [rid for rid in self.tracked if rid not in seen]
        for rid in gone:
            del self.tracked[rid]
            self.following.pop(rid, None)
        for rid in [rid for rid in self._from_index if rid not in seen]:
            del self._from_index[rid]
        news: list[RunUpdate | None] = [RunUpdate(rid, gone=True) for rid in gone]
        summaries = _load_index(Path(self.root)) if self._index is None else self._index
        self._index = {}  # read once: runs that come later are new, their logs are read
        for entry in reversed(entries):  # newest first: what the table shows first fills in first
            if entry.name in summaries:
                self._from_index[entry.name] = (entry.path, summaries[entry.name])
            elif entry.name not in self.tracked and entry.name not in self._from_index:
                news.append(self._track(RunDir(entry.path)))
        return [u for u in news if u is not None]

    def _take_summaries(self, news: list[RunUpdate | None]) -> bool:
        """Rows from the run index: the newest FIRST_ROWS at the first pass, the rest at the next. Returns
        whether some wait."""
        if not self._from_index or time.monotonic() < self._hold_until:
            return False  # (the first rows are being drawn: the rest wait)
        ids = list(self._from_index)[:FIRST_ROWS] if self._first_rows else list(self._from_index)
        if self._first_rows and len(self._from_index) > FIRST_ROWS:
            self._hold_until = time.monotonic() + self.hold
        self._first_rows = False
        for run_id in ids:
            path, summary = self._from_index.pop(run_id)
            news.append(self._track(RunDir(path), summary))
        return False

    def _track(self, run: RunDir, summary: Summary | None = None) -> RunUpdate | None:
        """Follow a run; one with a good summary gets its row from it (that update), its log unread."""
        if summary is not None and summary.key == _fingerprint(os.fspath(run.path)):
            t = self.tracked[run.id] = TrackedRun(run)
            update = t.from_summary(summary)
            if update is not None:
                return update  # not followed: its log is left unread
        try:
            os.stat(run.info_path)
        except FileNotFoundError:
            self.tracked.pop(run.id, None)
            return None  # being created: run.json comes next
        except OSError:
            pass  # tracked all the same: reading it reports the problem
        self.tracked[run.id] = self.following[run.id] = TrackedRun(run)
        return None

    def _take_wanted(self) -> None:
        with self._wanted_lock:
            wanted, self._wanted = self._wanted, set()
        for run_id in wanted:
            t = self.tracked.get(run_id)
            if t is not None and t.summarized:
                self._follow(t)

    def _follow(self, t: TrackedRun) -> None:
        """Read a summarized run's log from now on (wanted, or its files changed)."""
        t.unsummarize()
        self._refresh_info(t)
        self.following[t.run.id] = t

    def _read_live(self, news: list[RunUpdate | None]) -> bool:
        """New lines of every run already seen. Returns whether any has more waiting."""
        behind = False
        for t in list(self.following.values()):
            if t.seen:
                update, more = t.read_new()
                news.append(update)
                behind = behind or more
                if update is not None and any(e.get("type") in FINAL for e in update.events):
                    news.append(self._refresh(t))  # what its place makes of it, before the row shows it
        return behind

    def _read_history(self, news: list[RunUpdate | None], budget: int) -> bool:
        """First tails of new runs (newest first), else slices of histories. Returns whether to come back
        at once (more to read and nothing to wait for)."""
        fresh = [t for t in self.following.values() if not t.seen]
        for t in fresh:
            if budget <= 0:
                return True
            update, used = t.first_read()
            news.append(update)
            budget -= used
        if fresh:  # their rows go out now; their histories a little later
            self._hold_until = time.monotonic() + self.hold
            return False
        if time.monotonic() < self._hold_until:
            return False
        for t in list(self.following.values()):
            while t.backfill is not None and budget > 0:
                update, used = t.backfill_step(budget)
                news.append(update)
                budget -= max(used, 1)
        return any(t.backfill is not None for t in self.following.values())

    def _refresh(self, t: TrackedRun) -> RunUpdate | None:
        """Re-read a changed run.json, and check whether an unfinished run's process still lives."""
        info_changed = self._refresh_info(t) | self._ask_place(t)
        place = places.of(t.info or {})
        if not (info_changed or t.alive is not False or place.watched(t.info or {})):
            return None  # a vanished process does not come back unless run.json changes (a resume);
            # a run on another host is asked each time: its heartbeat may come back (a slow file system)
        # launch() writes run.json just before it starts the process: give it a moment.
        info = t.info or {}
        launching = not info.get("pid") and time.time() - t.info_mtime < LAUNCH_GRACE_S
        alive = None if launching else place.alive(t.run.path, info)
        reason = place.reason(info) if alive else ""
        if alive == t.alive and reason == t.slurm_reason and not info_changed:
            return None
        t.alive, t.slurm_reason = alive, reason
        return t.update() if t.seen else None  # an unseen run's first read carries the facts

    def _ask_place(self, t: TrackedRun) -> bool:
        """What the run's place makes of each final event now (`Place.final_status`, the question
        `run_status` asks for `ls`: a `stopped` that is Slurm's own TERM is `running` while its job runs),
        kept with run.json's facts (`PLACE_FINALS`, which `RunState.status` reads). Returns whether it
        changed."""
        info = t.info
        if info is None:
            return False
        place = places.of(info)
        finals = {f: said for f in FINALS if (said := place.final_status(info, f)) != f}
        key, live = place.info_key, self._live_fields(place, info)
        own = info.get(key) if key else None
        if finals == (info.get(PLACE_FINALS) or {}) and (not isinstance(own, dict) or own.get(LIVE) == live):
            return False
        t.info = {**info, PLACE_FINALS: finals}  # a new dict: the one posted before is the app's
        if isinstance(own, dict):
            t.info[key] = {**own, LIVE: live}  # type: ignore[index]
        return True

    @staticmethod
    def _live_fields(place: places.Place, info: dict) -> dict | None:
        """What `ls` shows of a waiting or running run's place now (`Place.row_fields`: a Slurm job's
        partition, nodes, time limit and time left, as squeue says them) and, while it waits, what holds
        what it waits for (`Place.waits_for`, as `waits_for`), kept under `LIVE` in its facts for the log
        pane; None once the run has ended (run.json's own facts say it) or its place has none."""
        if place.info_key is None or place.info_key not in info or not place.watched(info):
            return None
        fields = place.row_fields(info, "queued" if in_queue(info) else "running", [])
        waits = place.waits_for(info)  # what holds the nodes it waits for (squeue's view, bounded)
        return fields if fields is None or not waits else {**fields, "waits_for": waits}

    def _refresh_info(self, t: TrackedRun) -> bool:
        try:
            mtime = os.stat(t.run.info_path).st_mtime
        except OSError:
            return False
        if mtime == t.info_mtime:
            return False
        t.info_mtime, t.info = mtime, t.run.read_info()
        t.epochs = t.run.epochs(t.info) if t.info else None  # a script's own come in its events
        return True

    def _check_summarized(self) -> None:
        """CHECKS summarized runs a scan, in turn: one whose files changed since (a resume rewrites run.json,
        which touches its folder; an append grows its log) is read afresh."""
        ids = [i for i, t in self.tracked.items() if t.summarized]
        self._checked = self._checked if self._checked < len(ids) else 0
        for run_id in ids[self._checked:self._checked + CHECKS]:
            t = self.tracked[run_id]
            if time.monotonic() - t.summarized_at < self.scan_every:
                continue  # just taken from the index, its files just stat'ed
            try:
                folder, size = os.stat(t.run.path).st_mtime_ns, os.stat(t.run.events).st_size
            except OSError:
                folder, size = -1, -1
            if (folder, size) != t.summarized_files:
                self._follow(t)
        self._checked += CHECKS


def _load_index(home: Path) -> dict[str, Summary]:
    from trainconsole.protocol import index  # on the reader's thread, after the first frame

    return index.load(home)


def _fingerprint(path: str) -> str:
    from trainconsole.protocol.index import fingerprint

    return fingerprint(path)
