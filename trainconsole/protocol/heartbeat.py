"""A run's heartbeat: how a host that cannot see a run's process knows it lives (stdlib only).

The run's top process (config trainer, script runner, tune driver, queue waiter) replaces
`RUN_DIR/heartbeat.json` every `interval_s()` seconds (temp file + rename, so a reader never sees half of
one) with who it is (host, pid, start time) and the time; its last one says `ended`. Only hosts other than
the run's own read it (`hosts.alive`): on its own host a run is judged by its pid and start time.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

FILE = "heartbeat.json"
#: How often a run writes its heartbeat; the env var shortens it in tests.
ENV_INTERVAL = "TRAINCONSOLE_HEARTBEAT_S"
#: How long a heartbeat may be silent before another host calls the run `lost`.
ENV_SILENCE = "TRAINCONSOLE_HEARTBEAT_SILENCE_S"
INTERVAL_S = 5.0
SILENCE_S = 30.0


def interval_s() -> float:
    """Seconds between two heartbeats (`TRAINCONSOLE_HEARTBEAT_S`, default 5)."""
    return _seconds(ENV_INTERVAL, INTERVAL_S)


def silence_s() -> float:
    """Seconds of silence after which a run on another host is `lost` (`TRAINCONSOLE_HEARTBEAT_SILENCE_S`,
    default 30: six missed heartbeats, room for a slow shared file system)."""
    return _seconds(ENV_SILENCE, SILENCE_S)


@dataclass(frozen=True)
class Beat:
    """One heartbeat: the process that wrote it and when (its host's clock)."""

    host: str
    pid: int
    pid_started: float
    t: float
    ended: bool = False


def write(run_path: str | os.PathLike[str], beat: Beat) -> None:
    """Replace the run's heartbeat file atomically."""
    path = Path(run_path) / FILE
    tmp = path.with_name(f".{FILE}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(asdict(beat)))
    os.replace(tmp, path)


def read(run_path: str | os.PathLike[str]) -> Beat | None:
    """The run's last heartbeat, or None if it has none (or it cannot be read)."""
    try:
        data = json.loads((Path(run_path) / FILE).read_text())
        return Beat(host=str(data["host"]), pid=int(data["pid"]), pid_started=float(data["pid_started"]),
                    t=float(data["t"]), ended=bool(data.get("ended", False)))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _seconds(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        return default
    return value if value > 0 else default
