"""Other hosts' device snapshots, for the devices pane: read again only when their file changed.

The home's `devices/` folder holds a snapshot per host (`trainers/protocol/host_devices.py`). Each look
is one `scandir` and one `stat` per host; a file is read only when its modification time or size moved.
This host's own snapshot is left out: the console samples this host's devices itself. The app looks only
while the devices pane is shown; looking, it touches `devices/.watched` every 5 s, so that the hosts
publish every 2 s (else every 10 s).
"""

from __future__ import annotations

import time
from pathlib import Path

from trainconsole.protocol import host_devices
from trainconsole.protocol.host_devices import HostSnapshot
from trainconsole.protocol.places import host as hosts


class OtherHosts:
    """The latest snapshot of every other host of the home, kept between looks."""

    def __init__(self, home: Path, this_host: str | None = None) -> None:
        self.home = home
        self.own = host_devices.path(home, this_host or hosts.this_host()).name
        self._seen: dict[str, tuple[tuple[int, int], HostSnapshot | None]] = {}
        self.reads = 0  # files read (not only stat'ed) so far
        self._watched = -host_devices.WATCH_EVERY_S

    def look(self, now: float) -> tuple[HostSnapshot, ...]:
        """Every other host's snapshot not older than FORGET_S, by host name."""
        if time.monotonic() - self._watched >= host_devices.WATCH_EVERY_S:
            self._watched = time.monotonic()
            try:
                host_devices.watch(self.home)  # the hosts publish every 2 s while someone looks
            except OSError:
                pass
        seen: dict[str, tuple[tuple[int, int], HostSnapshot | None]] = {}
        for entry in host_devices.files(self.home):
            if entry.name == self.own:
                continue
            try:
                stat = entry.stat()
            except OSError:
                continue
            key = (stat.st_mtime_ns, stat.st_size)
            known = self._seen.get(entry.name)
            if known is None or known[0] != key:
                known = (key, host_devices.read(entry.path))
                self.reads += 1
            seen[entry.name] = known
        self._seen = seen
        found = [s for _, s in seen.values() if s is not None and s.age(now) <= host_devices.FORGET_S]
        return tuple(sorted(found, key=lambda s: s.host))

