"""Publishing a host's device snapshot (`host_devices.py`): one writer per host at a time, cheaply.

Every run's watchdog holds a `Publisher` and calls `tick()` about once a second; so does `trainconsole
devices --publish` on an idle host. Whichever process holds the host's lock (`<host>.lock`, a
non-blocking `flock`) publishes, at most every `EVERY_S` while a console looks at the hosts (it touches
`devices/.watched`) and every `idle_s()` (10 s, within the heartbeat's silence) while none does; the
others only try the lock now and then, and one of them takes over when the holder ends (the kernel drops
its lock). Each run's top process registers the run (`register`), so the publisher knows the host's runs
without reading the home.

What it costs (benchmarks/device_publish.py): on a GPU host, NVML's figures and, for each GPU process
not seen before, a walk up its parents to a run's top process; without a GPU, each run's processes' RSS
and, every `FAMILY_S`, one pass over the process table to find new ones. psutil and nvidia-ml-py are
imported on first use.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from . import host_devices, nvml, processes
from .processes import process_alive

#: How often (at most) the process table is read again to find the runs' new processes, without a GPU.
FAMILY_S = 10.0
#: Simulated GPUs for the publisher (the tests' hardware edge): their count, 0 for a host without any.
ENV_SIMULATED = "TRAINCONSOLE_SIMULATED_GPUS"
#: How far up a GPU process's parents a run's top process is looked for.
DEPTH = 12


def runs_folder(home: str | os.PathLike[str], host: str) -> Path:
    """Where the host's runs are registered."""
    return host_devices.folder(home) / f"{host_devices.safe(host)}.runs"


def register(home: str | os.PathLike[str], host: str, run_id: str, pid: int, started: float,
             name: str = "") -> None:
    """Say that the run's top process (pid and start time) lives on this host."""
    target = runs_folder(home, host) / run_id
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = target.with_name(f".{run_id}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"pid": pid, "pid_started": started, "name": name}))
    os.replace(tmp, target)


def unregister(home: str | os.PathLike[str], host: str, run_id: str) -> None:
    """The run no longer lives on this host."""
    (runs_folder(home, host) / run_id).unlink(missing_ok=True)


def registered(home: str | os.PathLike[str], host: str) -> dict[str, dict[str, Any]]:
    """Each registered run of the host whose top process still lives; the others are forgotten."""
    found: dict[str, dict[str, Any]] = {}
    try:
        entries = [e for e in os.scandir(runs_folder(home, host)) if not e.name.startswith(".")]
    except OSError:
        return found
    for entry in entries:
        try:
            info = json.loads(Path(entry.path).read_text())
        except (OSError, ValueError):
            continue
        if isinstance(info, dict) and process_alive(info.get("pid"), info.get("pid_started")):
            found[entry.name] = info
        else:  # its process died without saying so (SIGKILL, a crash)
            Path(entry.path).unlink(missing_ok=True)
    return found


class Simulated:
    """A simulated NVML (`nvml.simulated`), the registered runs sharing `count` GPUs."""

    def __init__(self, count: int) -> None:
        self.count, self.note = count, ""

    @property
    def available(self) -> bool:
        """Simulated GPUs (none: the host's memory)."""
        return self.count > 0

    def read(self, owner: Any, families: Any, details: bool = False) -> nvml.Reading:
        """The same figures every time for the same runs."""
        return nvml.simulated(self.count, sorted(families))


def reader() -> nvml.Nvml | Simulated:
    """NVML, or the simulated one where the environment asks for it."""
    count = os.environ.get(ENV_SIMULATED, "")
    return Simulated(int(count)) if count.isdigit() else nvml.Nvml()


class Publisher:
    """Publishes this host's snapshot while it holds the host's lock."""

    def __init__(self, home: str | os.PathLike[str], host: str,
                 every_s: float = host_devices.EVERY_S, idle_s: float | None = None) -> None:
        self.home, self.host, self.every_s = Path(home), host, every_s
        self.idle_s = host_devices.idle_s() if idle_s is None else idle_s
        self.reader = reader()
        self._lock: int | None = None
        self._tried = self._published = -every_s
        self._families: dict[str, set[int]] = {}
        self._family_at = -FAMILY_S
        self._registry: tuple[int | None, dict[str, dict[str, Any]]] = (None, {})
        self._owners: dict[int, str | None] = {}  # a GPU process's run, found once (pids of live runs)

    @property
    def holds(self) -> bool:
        """Whether this process is the host's publisher now."""
        return self._lock is not None

    def tick(self) -> bool:
        """Publish if it is time and this process holds (or now takes) the lock; True if it published.
        It is time every `every_s` while a console looks at the hosts, else every `host_devices.idle_s()`."""
        now = time.monotonic()
        if now - self._published < self.every_s:
            return False
        if now - self._published < self.idle_s and not host_devices.watched(self.home, time.time()):
            return False
        if self._lock is None and (now - self._tried < self.every_s or not self._take()):
            return False
        self.publish()
        self._published = now
        return True

    def _take(self) -> bool:
        import fcntl

        self._tried = time.monotonic()
        lock = host_devices.folder(self.home) / f"{host_devices.safe(self.host)}.lock"
        try:
            lock.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # another process of this host publishes
            os.close(fd)
            return False
        self._lock = fd
        return True

    def publish(self) -> None:
        """Write the snapshot now."""
        host_devices.write(self.home, self.snapshot())

    def snapshot(self) -> host_devices.HostSnapshot:
        """This host's devices now, each share named by the run it belongs to."""
        again = time.monotonic() - self._family_at >= FAMILY_S
        runs = self._runs(again)
        if again:  # the process table is read again (no GPU), "another's" GPU process asked again
            self._family_at = time.monotonic()
            self._owners.clear()
        leaders = {int(info["pid"]): run_id for run_id, info in runs.items()}
        if self.reader.available:
            families, owner = {r: set() for r in runs}, Owners(leaders, self._owners)
        else:
            families, owner = self._families_of(runs, again), {}
        reading = self.reader.read(owner, families, details=True)
        names = {run_id: str(info.get("name") or run_id) for run_id, info in runs.items()}
        return host_devices.HostSnapshot(self.host, time.time(), reading.gpus,
                                         reading.host or nvml.host_memory(), reading.note, names)

    def _runs(self, again: bool) -> dict[str, dict[str, Any]]:
        """The host's live registered runs: the files read again when the folder changed (or `again`:
        a change within the file system's clock tick), their processes looked at each time."""
        try:
            key = os.stat(runs_folder(self.home, self.host)).st_mtime_ns
        except OSError:
            key = None
        if again or key != self._registry[0]:
            self._registry = (key, registered(self.home, self.host))
        runs = self._registry[1]
        live = {r: i for r, i in runs.items() if process_alive(i.get("pid"), i.get("pid_started"))}
        if len(live) != len(runs):  # one died unsaid: forgotten (its file too) at the next read
            self._registry = (None, live)
        return live

    def _families_of(self, runs: dict[str, dict[str, Any]], again: bool) -> dict[str, set[int]]:
        """Each run's processes: the process table read `again`, or for a new run."""
        if again or set(runs) != set(self._families):
            found = trees(int(info["pid"]) for info in runs.values())
            self._families = {run_id: found[int(info["pid"])] for run_id, info in runs.items()}
        return self._families

    def close(self) -> None:
        """Give the lock up (another process of this host takes over at its next try)."""
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None


class Owners:
    """pid -> run id for a GPU's processes: a run's top process, or a process with one among its parents
    (walked up once per pid and remembered)."""

    def __init__(self, leaders: dict[int, str], seen: dict[int, str | None]) -> None:
        self.leaders, self.seen = leaders, seen
        for pid in [p for p, run in seen.items() if run is not None and run not in leaders.values()]:
            del seen[pid]  # that run has ended: its pids may be reused

    def get(self, pid: int, default: str | None = None) -> str | None:
        """The run the process belongs to, or `default`."""
        if pid not in self.seen:
            self.seen[pid] = self._walk(pid)
        found = self.seen[pid]
        return default if found is None else found

    def _walk(self, pid: int) -> str | None:
        for _ in range(DEPTH):
            if pid in self.leaders:
                return self.leaders[pid]
            parent = _ppid(pid)
            if parent is None or parent <= 1:
                return None
            pid = parent
        return None


def trees(roots: Iterable[int]) -> dict[int, set[int]]:
    """Each root with all its descendants, from one pass over /proc (`processes.trees`, which asks
    psutil and costs about three times as much, where there is no /proc)."""
    children: dict[int, list[int]] = {}
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return processes.trees(roots)
    for pid in pids:
        parent = _ppid(pid)
        if parent is not None:
            children.setdefault(parent, []).append(pid)
    found = {}
    for root in roots:
        pids_of, todo = {root}, [root]
        while todo:
            kids = [k for k in children.get(todo.pop(), ()) if k not in pids_of]
            todo += kids
            pids_of.update(kids)
        found[root] = pids_of
    return found


def _ppid(pid: int) -> int | None:
    """A process's parent, from /proc (psutil where there is none)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read().decode(errors="replace")
        return int(text[text.rfind(")") + 2 :].split()[1])
    except FileNotFoundError:
        if os.path.isdir("/proc/self"):
            return None
    except (OSError, ValueError, IndexError):
        return None
    import psutil

    try:
        return psutil.Process(pid).ppid()
    except psutil.Error:
        return None
