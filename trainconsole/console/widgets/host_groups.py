"""The devices pane's other hosts: where the next run fits (free memory per host), then a group per host
with a bar per GPU split by run, as this host's above; a silent host greyed with its age. Narrow, a line
per host, expanded by a click on it (or enter for all). Shows nothing while the home has one host."""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.widget import Widget

from trainconsole.console.core.board import human_bytes
from trainconsole.console.services.gpu import Devices
from trainconsole.console.widgets.gpu_bars import bar
from trainconsole.protocol.host_devices import HostSnapshot


class HostGroups(Widget, can_focus=True):
    """Renders other hosts' snapshots; knows nothing of files or NVML."""

    DEFAULT_CSS = "HostGroups { height: auto; display: none; } HostGroups:focus { background: $boost; }"
    BINDINGS = [Binding("enter", "expand", "Expand hosts")]

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.here: tuple[str, Devices | None] = ("", None)
        self.others: tuple[HostSnapshot, ...] = ()
        self.labels: dict[str, str] = {}
        self.now = 0.0
        self.expanded: set[str] = set()  # hosts shown whole while narrow
        self._line_hosts: list[str | None] = []  # the host each drawn line belongs to (for clicks)

    def show(self, here: str, devices: Devices | None, others: tuple[HostSnapshot, ...],
             labels: dict[str, str], now: float) -> None:
        """Draw other hosts' snapshots as of `now`, this host's free memory from its own sample."""
        state = ((here, devices), others, labels, round(now))
        if state != (self.here, self.others, self.labels, round(self.now)):
            self.here, self.others, self.labels, self.now = (here, devices), others, labels, now
            if others or self.display:  # (hidden and staying so: no layout of the screen, ~10 ms each)
                self.display = bool(others)
                self.refresh(layout=True)

    @property
    def compact(self) -> bool:
        """A line per host: the screen shows one pane at a time."""
        return self.screen.has_class("-narrow")

    def action_expand(self) -> None:
        """Expand every host's line (or fold them all again)."""
        hosts = {s.host for s in self.others}
        self.expanded = set() if hosts <= self.expanded else hosts
        self.refresh(layout=True)

    def on_click(self, event: events.Click) -> None:
        """A click on a host's line expands (or folds) it."""
        host = self._line_hosts[event.y] if 0 <= event.y < len(self._line_hosts) else None
        if host is not None:
            self.expanded ^= {host}
            self.refresh(layout=True)

    def render(self) -> Text:
        """Where the next run fits (free memory per fresh host), then each other host: whole, or a line
        (narrow, or silent) that says what is free there."""
        width, text, rows = max(24, self.size.width - 1), Text(), [None, None, None]
        text.append("\nfree now (where the next run fits)\n", style="bold")
        text.append(f"  {self.here[0]}  {_figures(_free(self.here[1]))}\n")
        if not self.compact:  # (narrow, each host's line says what is free there)
            for snap in [s for s in self.others if not s.stale(self.now)]:
                text.append(f"  {snap.host}  {_figures(snap.free())}\n")
                rows.append(None)
        order = list(self.others)
        if not self.compact:  # silent hosts first, a line each, by the free memory (the groups scroll)
            order.sort(key=lambda s: not s.stale(self.now))
        for snap in order:
            stale, start = snap.stale(self.now), len(text)
            if (self.compact or stale) and snap.host not in self.expanded:
                self._host_line(text, snap, stale)
                rows.append(snap.host)
            else:
                rows += self._host_group(text, snap, width)
            if stale:  # silent longer than a heartbeat may be: greyed
                text.stylize("dim", start, len(text))
        text.rstrip()
        self._line_hosts = rows
        lines = text.split("\n")
        for line in lines:
            line.truncate(width, overflow="ellipsis")
        return Text("\n").join(lines)

    def _age_text(self, snap: HostSnapshot) -> str:
        age = f"{snap.age(self.now):.0f}s"
        return f"silent {age}" if snap.stale(self.now) else f"{age} ago"

    def _host_line(self, text: Text, snap: HostSnapshot, stale: bool) -> None:
        """One host in a line: what is free there (not for a silent host), its runs, the snapshot's age."""
        runs = ", ".join(self._run_label(snap, r) for r in sorted(snap.names)) or "no runs"
        text.append("▸ ", style="bold")
        text.append(snap.host, style="bold")
        free = "" if stale or not self.compact else f"{_figures(snap.free())} free · "
        text.append(f"  {free}{runs} · {self._age_text(snap)}\n")

    def _host_group(self, text: Text, snap: HostSnapshot, width: int) -> list[str | None]:
        """A host whole: a heading, then a bar per GPU (or its memory) split by run; the host of each line."""
        start = text.plain.count("\n")
        text.append(f"{'▾ ' if self.compact else ''}{snap.host}", style="bold underline")
        text.append(f"  {self._age_text(snap)}\n")
        labels = {run: self._run_label(snap, run) for run in snap.names} | self.labels
        for gpu in snap.gpus:
            util = "" if gpu.util is None else f" util {gpu.util}%"
            text.append(f"GPU{gpu.index}{util}  {gpu.name}\n", style="bold")
            bar(text, f"{gpu.index}", gpu.used, gpu.total, gpu.by_run, width, labels)
        if not snap.gpus and snap.memory is not None:
            bar(text, "host", snap.memory.used, snap.memory.total, snap.memory.by_run, width, labels)
        drawn = text.plain.count("\n") - start
        return [snap.host] + [None] * (drawn - 1)

    def _run_label(self, snap: HostSnapshot, run: str) -> str:
        return self.labels.get(run) or snap.names.get(run) or run


def _figures(free: list[tuple[str, int]]) -> str:
    """`gpu0 70G · gpu1 64G`."""
    return " · ".join(f"{device} {human_bytes(n)}" for device, n in free) or "nothing known"


def _free(devices: Devices | None) -> list[tuple[str, int]]:
    """This host's free memory: per GPU, else the host's."""
    if devices is None:
        return []
    if devices.gpus:
        return [(f"gpu{g.index}", max(0, g.total - g.used)) for g in devices.gpus]
    return [] if devices.host is None else [("mem", max(0, devices.host.total - devices.host.used))]
