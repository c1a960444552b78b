"""The devices pane: a memory bar per GPU split by run (or the host's, by RSS), and the selected run's
torch allocator figures."""

from __future__ import annotations

import math

from rich.console import Group
from rich.text import Text
from textual.widget import Widget

from trainconsole.console.core.board import human_bytes
from trainconsole.console.core.columns import middle
from trainconsole.console.services.gpu import Devices
from trainconsole.protocol.shapes import Mem

GLYPHS = ("█", "▓", "▒", "▚", "▞", "▙")
COLORS = ("cyan", "magenta", "yellow", "green", "blue", "red")


class GpuBars(Widget):
    """Renders a `Devices` snapshot; knows nothing of NVML or processes."""

    DEFAULT_CSS = "GpuBars { height: auto; }"

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.devices: Devices | None = None
        self.labels: dict[str, str] = {}
        self.selected: tuple[str, Mem | None] | None = None

    def show(self, devices: Devices | None, labels: dict[str, str]) -> None:
        """Draw a new snapshot; `labels` names each run id."""
        if devices != self.devices or labels != self.labels:
            lines = _shape(devices) != _shape(self.devices)
            self.devices, self.labels = devices, labels
            self.refresh(layout=lines)

    def show_run(self, label: str | None, mem: Mem | None) -> None:
        """Show the selected run's torch memory (from its latest `step` event), or nothing."""
        selected = None if label is None else (label, mem)
        if selected != self.selected:
            # Only a change in the number of lines needs a new layout; new figures just repaint.
            lines = _lines(self.selected) != _lines(selected)
            self.selected = selected
            self.refresh(layout=lines)

    def render(self) -> Group:
        """The note (wrapped), then the bars, their legend and the selected run's memory (cropped)."""
        width, d, text = max(24, self.size.width - 1), self.devices, Text()
        note = Text("sampling devices…" if d is None else d.note, style="dim" if d is None else "yellow")
        if d is not None:
            for gpu in d.gpus:
                util = "" if gpu.util is None else f" util {gpu.util}%"
                text.append(f"GPU{gpu.index}{util}  {gpu.name}\n", style="bold")
                self._bar(text, f"{gpu.index}", gpu.used, gpu.total, gpu.by_run, width)
            if d.host is not None:
                self._bar(text, "host", d.host.used, d.host.total, d.host.by_run, width)
            if d.disk is not None:  # red below what the next checkpoint needs
                # the need on a line of its own: the pane is narrow, and the lines are cut at its width
                need = f"\n  a checkpoint needs {human_bytes(d.disk.needed)}" if d.disk.low else ""
                text.append(f"disk {human_bytes(d.disk.free)} free of {human_bytes(d.disk.total)}{need}\n",
                            style="bold red" if d.disk.low else "dim")
                if d.disk.home_bytes is not None:
                    text.append(f"runs hold {human_bytes(d.disk.home_bytes)}\n", style="dim")
        self._selected(text, width)
        text.rstrip()
        lines = text.split("\n")
        for line in lines:
            line.truncate(width, overflow="ellipsis")
        return Group(note, Text("\n").join(lines)) if note else Text("\n").join(lines)

    def _bar(self, text: Text, name: str, used: int, total: int, by_run: tuple[tuple[str, int], ...],
             width: int) -> None:
        bar(text, name, used, total, by_run, width, self.labels)

    def _selected(self, text: Text, width: int) -> None:
        if self.selected is None:
            return
        label, mem = self.selected
        text.append("\nselected: " + middle(label, width - 10) + "\n", style="bold")
        mem = mem or {}
        devices = mem.get("devices") or []
        for dev in devices:
            figures = "  ".join(f"{k} {human_bytes(dev.get(k) or 0)}" for k in ("allocated", "reserved"))
            figures += f"  peak {human_bytes(dev.get('peak') or 0)}"
            rank = f"rank {dev['rank']} " if "rank" in dev else ""
            text.append(f"  torch {rank}{dev.get('device', '?')}  {figures}\n")
        if not devices:
            text.append("  torch: CPU only\n", style="dim")
        ranks = [r for r in mem.get("ranks") or [] if isinstance(r, dict)]
        if ranks:  # DDP: every rank's process, from the last time the ranks met
            total = sum(r.get("rss") or 0 for r in ranks)
            text.append(f"  host rss {human_bytes(total)} over {len(ranks)} ranks\n")
        elif mem.get("rss"):
            text.append(f"  host rss {human_bytes(mem['rss'])}\n")


def _lines(selected: tuple[str, Mem | None] | None) -> tuple[int, bool]:
    mem = (selected or ("", None))[1] or {}
    return len(mem.get("devices") or []), bool(mem.get("ranks") or mem.get("rss"))


def _shape(devices: Devices | None) -> tuple[object, ...]:
    """What decides the pane's height: the devices, and how many runs each is split between."""
    if devices is None:
        return ()
    host = None if devices.host is None else len(devices.host.by_run)
    return tuple(len(g.by_run) for g in devices.gpus), host, devices.note, devices.disk is None


def bar(text: Text, name: str, used: int, total: int, by_run: tuple[tuple[str, int], ...], width: int,
        labels: dict[str, str]) -> None:
    """A memory bar split by run (a glyph and colour each, the rest dim), then a line per run's share."""
    suffix = f" {human_bytes(used)}/{human_bytes(total)}"
    cells = max(4, width - len(name) - len(suffix) - 3)
    text.append(f"{name} ▕")
    drawn = 0
    for k, (_, nbytes) in enumerate(by_run):
        n = min(cells - drawn, math.ceil(nbytes / max(total, 1) * cells))
        text.append(GLYPHS[k % len(GLYPHS)] * n, style=COLORS[k % len(COLORS)])
        drawn += n
    other = min(cells - drawn, max(0, round(used / max(total, 1) * cells) - drawn))
    text.append("░" * other, style="dim")
    text.append(" " * (cells - drawn - other) + "▏" + suffix + "\n")
    for k, (run_id, nbytes) in enumerate(by_run):
        glyph, color = GLYPHS[k % len(GLYPHS)], COLORS[k % len(COLORS)]
        text.append(f"  {glyph} ", style=color)
        amount = f" {human_bytes(nbytes)}"
        text.append(middle(labels.get(run_id, run_id), width - 4 - len(amount)) + amount + "\n")
