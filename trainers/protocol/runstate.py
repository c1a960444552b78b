"""One truth for a run's state, and the per-run lock that lifecycle operations hold (stdlib only).

The CLI, `ls`, the console and the lifecycle guards (launch, resume, stop, kill) all ask `run_status`;
`run.json` records facts (pid, start times, ended_at), never a status of its own.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .events import FINAL, STARTED, Event, tail

if TYPE_CHECKING:
    from .rundir import RunDir

#: How far a recorded start time may differ from the kernel's and still be the same process.
START_TIME_SLACK_S = 0.05


class RunBusy(Exception):
    """A lifecycle operation met a run whose process is alive (or starting)."""

    def __init__(self, run_id: str) -> None:
        super().__init__(f"run {run_id} is already running")
        self.run_id = run_id


def derive_status(final: str | None, final_t: float, started_at: float | None, alive: bool | None,
                  queued: bool = False) -> str:
    """The status from the facts: the last final event (kind and time) since the last `started`, the
    time the current process was launched (run.json's `started_at`), whether that process is alive
    (None: not known yet), and whether the run waits in the queue.

    A final event counts unless the run was launched again after it (a resume); a run with no final
    event since its launch is running while its process lives, and lost once it has vanished.
    """
    relaunched = started_at is not None and started_at > final_t
    if final is not None and not relaunched:
        return final
    if queued:
        return "lost" if alive is False else "queued"
    return "lost" if alive is False else "running"


def last_final(events: list[Event]) -> tuple[str | None, float]:
    """The status given by the newest final event since the newest `started` (None if none), and its time."""
    for event in reversed(events):
        kind = event.get("type")
        if kind in FINAL:
            t = event.get("t")
            return FINAL[kind], float(t) if isinstance(t, (int, float)) else 0.0
        if kind == STARTED:
            break
    return None, 0.0


def run_status(run: RunDir, events: list[Event] | None = None, info: dict[str, Any] | None = None) -> str:
    """running, finished, failed, stopped, killed, lost or queued: the one status of a run."""
    events = tail(run.events) if events is None else events
    info = run.read_info() if info is None else info
    final, final_t = last_final(events)
    alive = process_alive(info.get("pid"), info.get("pid_started"))
    queued = bool(info.get("queued")) and not any(e.get("type") == STARTED for e in events)
    return derive_status(final, final_t, info.get("started_at"), alive, queued)


def process_alive(pid: int | None, started: float | None) -> bool:
    """True if the process with this pid *and* this start time lives (a zombie counts as gone)."""
    if not pid or started is None:
        return False
    stat = _proc_stat(int(pid))
    if stat is None:
        return _alive_elsewhere(int(pid), started)
    state, ticks = stat
    if state in ("Z", "X"):
        return False
    return abs(_boot_time() + ticks / os.sysconf("SC_CLK_TCK") - started) <= START_TIME_SLACK_S


def _proc_stat(pid: int) -> tuple[str, int] | None:
    # /proc/PID/stat: "pid (comm) state ... starttime(22nd field)"; comm may hold spaces and parens.
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read().decode(errors="replace")
    except (FileNotFoundError, ProcessLookupError):
        return ("X", 0) if os.path.isdir("/proc/self") else None
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()
    return fields[0], int(fields[19])


_BOOT_TIME: list[float] = []


def _boot_time() -> float:
    if not _BOOT_TIME:
        with open("/proc/stat") as f:
            _BOOT_TIME.append(next(float(line.split()[1]) for line in f if line.startswith("btime")))
    return _BOOT_TIME[0]


def _alive_elsewhere(pid: int, started: float) -> bool:
    # Without /proc (macOS): psutil when it is there, else the pid alone.
    try:
        import psutil

        proc = psutil.Process(pid)
        same = abs(proc.create_time() - started) <= START_TIME_SLACK_S
        return same and proc.status() != psutil.STATUS_ZOMBIE
    except ImportError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    except Exception:  # noqa: BLE001 - psutil.Error without importing it at module level
        return False


@contextlib.contextmanager
def locked(path: os.PathLike[str] | str) -> Iterator[None]:
    """Hold an exclusive `flock` on `path` (created if missing) for the duration of the block."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
