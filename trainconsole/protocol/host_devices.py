"""A host's device snapshot in the home: what its GPUs (or its memory) hold and which run holds it (stdlib).

Every host where a run lives (or waits) publishes `HOME/devices/<host>.json` at most every `EVERY_S`
(`device_publish.Publisher`, in every run's watchdog, and `trainconsole devices --publish`): per GPU its
name, memory used and total (bytes), utilisation, temperature, power, each run's share and its processes
(the run each belongs to, None for another's); the host's memory, and where there is no NVIDIA GPU each
run's RSS. It is replaced whole (temp file + rename), so a reader never sees half of one. Beside it,
`<host>.runs/<run id>` names each run that lives on the host (its top process registers it), so the
publisher knows which processes are whose without reading the home's runs.

A snapshot is judged as a heartbeat is: older than `heartbeat.silence_s()` it is stale (its host silent).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import heartbeat
from .nvml import Gpu, GpuProc, Host

FOLDER = "devices"
VERSION = 1
#: The shortest time between two snapshots of a host.
EVERY_S = 2.0
#: A stale snapshot is shown (greyed, with its age) this long, then left out.
FORGET_S = 3600.0
#: A console looking at other hosts touches this file (at most every WATCH_EVERY_S); while it is younger
#: than WATCHED_S, publishers publish every EVERY_S, else only as often as freshness needs (IDLE_S).
WATCHED = ".watched"
WATCH_EVERY_S = 5.0
WATCHED_S = 15.0
IDLE_S = 10.0


@dataclass(frozen=True)
class HostSnapshot:
    """One host's devices at time `t` (its own clock): its GPUs (none: see `note`), its memory, and the
    name of each run of this home that lives there."""

    host: str
    t: float
    gpus: tuple[Gpu, ...] = ()
    memory: Host | None = None
    note: str = ""
    names: dict[str, str] = field(default_factory=dict)

    def age(self, now: float) -> float:
        """Seconds since it was taken."""
        return max(0.0, now - self.t)

    def stale(self, now: float) -> bool:
        """Its host has been silent longer than a run's heartbeat may be."""
        return self.age(now) > heartbeat.silence_s()

    def free(self) -> list[tuple[str, int]]:
        """Where a next run would go: each GPU's free memory (`gpuN`), else the host's."""
        if self.gpus:
            return [(f"gpu{g.index}", max(0, g.total - g.used)) for g in self.gpus]
        if self.memory is not None:
            return [("mem", max(0, self.memory.total - self.memory.used))]
        return []


def watch(home: str | os.PathLike[str]) -> None:
    """Say that a console is looking at the hosts' devices (publishers speed up for WATCHED_S)."""
    flag = folder(home) / WATCHED
    try:
        os.utime(flag)
    except FileNotFoundError:
        flag.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        flag.touch()


def watched(home: str | os.PathLike[str], now: float) -> bool:
    """Whether a console has looked within WATCHED_S."""
    try:
        return now - os.stat(folder(home) / WATCHED).st_mtime <= WATCHED_S
    except OSError:
        return False


def idle_s() -> float:
    """How often a host publishes while no console looks: IDLE_S, or a third of the heartbeat's silence if
    that is less (so a snapshot never goes stale for it), never more often than EVERY_S."""
    return max(EVERY_S, min(IDLE_S, heartbeat.silence_s() / 3))


def folder(home: str | os.PathLike[str]) -> Path:
    """The home's folder of host snapshots."""
    return Path(home) / FOLDER


def safe(host: str) -> str:
    """A host name as a file name (anything but letters, digits, `.`, `_`, `-` becomes `_`)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", host).lstrip(".") or "_"


def path(home: str | os.PathLike[str], host: str) -> Path:
    """The host's snapshot file."""
    return folder(home) / f"{safe(host)}.json"


def write(home: str | os.PathLike[str], snap: HostSnapshot) -> None:
    """Replace the host's snapshot atomically."""
    target = path(home, snap.host)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    text = json.dumps(to_json(snap), separators=(",", ":"))
    try:
        tmp.write_text(text)
    except FileNotFoundError:  # the home's first snapshot (a mkdir at every write would cost a syscall)
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp.write_text(text)
    os.replace(tmp, target)


def to_json(snap: HostSnapshot) -> dict[str, Any]:
    """The file's shape (bytes, seconds since the epoch)."""
    mem = snap.memory
    return {"v": VERSION, "host": snap.host, "t": snap.t, "note": snap.note, "names": snap.names,
            "gpus": [{"index": g.index, "name": g.name, "used": g.used, "total": g.total, "util": g.util,
                      "temp": g.temp, "power": g.power, "runs": [list(r) for r in g.by_run],
                      "procs": [[p.pid, p.run, p.used] for p in g.procs]} for g in snap.gpus],
            "memory": None if mem is None else {"used": mem.used, "total": mem.total,
                                                "runs": [list(r) for r in mem.by_run]}}


def read(file: str | os.PathLike[str]) -> HostSnapshot | None:
    """A snapshot file, or None where it cannot be read (gone, half a file from an older writer, not ours)."""
    try:
        data = json.loads(Path(file).read_text())
        if not isinstance(data, dict) or data.get("v") != VERSION:
            return None
        mem = data.get("memory")
        return HostSnapshot(
            host=str(data["host"]), t=float(data["t"]), note=str(data.get("note") or ""),
            gpus=tuple(_gpu(g) for g in data.get("gpus") or []),
            memory=None if not mem else Host(int(mem["used"]), int(mem["total"]), _runs(mem.get("runs"))),
            names={str(k): str(v) for k, v in (data.get("names") or {}).items()})
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _gpu(g: dict[str, Any]) -> Gpu:
    procs = tuple(GpuProc(int(pid), None if run is None else str(run), int(used))
                  for pid, run, used in g.get("procs") or [])
    return Gpu(int(g["index"]), str(g["name"]), int(g["used"]), int(g["total"]), _int(g.get("util")),
               _runs(g.get("runs")), _int(g.get("temp")),
               None if g.get("power") is None else float(g["power"]), procs)


def _runs(pairs: Any) -> tuple[tuple[str, int], ...]:
    return tuple((str(run), int(n)) for run, n in pairs or [])


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def files(home: str | os.PathLike[str]) -> list[os.DirEntry[str]]:
    """Every host's snapshot file in the home (one `scandir`; an entry's `stat` is cached on it)."""
    try:
        with os.scandir(folder(home)) as entries:
            return [e for e in entries if e.name.endswith(".json") and not e.name.startswith(".")]
    except OSError:
        return []


def read_all(home: str | os.PathLike[str], now: float, this_host: str) -> list[HostSnapshot]:
    """Every host's snapshot not older than FORGET_S, this host's first, then by name."""
    found = [s for e in files(home) if (s := read(e.path)) is not None and s.age(now) <= FORGET_S]
    return sorted(found, key=lambda s: (s.host != this_host, s.host))
