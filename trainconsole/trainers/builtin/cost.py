"""What a run cost, recorded by the run itself: wall time, peak memory of its whole process tree, and on a
GPU its GPU-hours and energy. It goes into the run's final `finished` / `stopped` event as `cost`, and
every COST_EVERY_S into a `cost` event, so a comparison holds for finished runs, after a reattach, and
for a run that failed or was killed (its last `cost` event).

The `cost` field (all figures of the run's process tree: the run process, DDP ranks, DataLoader workers):
    {"wall_s": float, "host_peak": bytes, "gpu_peak": {"0": bytes, ...}, "gpu_hours": float | None,
     "energy_j": float | None}
`host_peak` is the largest RSS sum seen at one sampling; `gpu_peak` per GPU index (NVML) likewise;
`gpu_hours` and `energy_j` are None without a GPU. Torch-free: the console's compare view reads it.
A resumed run's figures are the whole run's: its earlier processes' wall time (`ran_s` in run.json), peaks
and energy (its log's last `cost`) are carried on.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any, Protocol, TypedDict

from trainconsole.protocol import FINAL
from trainconsole.trainers.lifecycle.memory import TreeMemory

SAMPLE_S = 0.5  # memory of the process tree, sampled in a thread (a few ms per sample)
COST_EVERY_S = 60.0  # a `cost` event this often, for runs that end without a final event of their own
FINAL_WITH_COST = {"finished", "stopped"}  # `failed` is written outside the loop: the last `cost` event


class Cost(TypedDict):
    """The `cost` field of a run's final event and of its `cost` events."""

    wall_s: float
    host_peak: int
    gpu_peak: dict[str, int]
    gpu_hours: float | None
    energy_j: float | None


class Emitter(Protocol):
    """The run's EventWriter (anything with `emit`)."""

    def emit(self, kind: str, **fields: Any) -> Any: ...


class CostMeter:
    """An emitter in front of the run's: from `started` on it samples the run's process tree; it adds
    `cost` to the final event, and writes a `cost` event every COST_EVERY_S in between."""

    def __init__(self, events: Emitter, run_dir: Any) -> None:
        self.events = events
        info = run_dir.read_info() if hasattr(run_dir, "read_info") else {}
        self.root = _run_root(run_dir, info.get("pid"))
        self.t0 = float(info.get("started_at") or time.time())
        self.ran_s = float(info.get("ran_s") or 0.0)  # earlier processes of a resumed run
        earlier = _last_cost(getattr(run_dir, "events", None)) if self.ran_s else {}
        self.host_peak = int(earlier.get("host_peak") or 0)
        self.gpu_peak: dict[str, int] = dict(earlier.get("gpu_peak") or {})
        self.energy_before = float(earlier.get("energy_j") or 0.0)
        self._energy0: dict[str, int] = {}
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._tree: TreeMemory | None = None

    def emit(self, kind: str, **fields: Any) -> Any:
        """Pass the event on; start sampling at `started`, add the cost to a final event."""
        if kind == "started" and self._thread is None:
            self._start()
        if kind in FINAL.values():
            self.stop()
            if kind in FINAL_WITH_COST:
                fields["cost"] = self.read()
        return self.events.emit(kind, **fields)

    def _start(self) -> None:
        self._tree = TreeMemory(self.root)
        self._energy0 = _energy(self._tree.nvml)
        self._sample()
        self._thread = threading.Thread(target=self._loop, name="cost", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        next_event = time.monotonic() + COST_EVERY_S
        while not self._done.wait(SAMPLE_S):
            self._sample()
            if time.monotonic() >= next_event:
                next_event += COST_EVERY_S
                self.events.emit("cost", cost=self.read())

    def _sample(self) -> None:
        mem = self._tree() if self._tree is not None else None
        if mem is None:
            return
        with self._lock:
            self.host_peak = max(self.host_peak, mem["rss"])
            for dev in mem["devices"]:
                index = dev["device"].removeprefix("cuda:")
                self.gpu_peak[index] = max(self.gpu_peak.get(index, 0), dev["reserved"])

    def stop(self) -> None:
        """Stop sampling (after one last sample); safe to call more than once."""
        if self._thread is not None and not self._done.is_set():
            self._done.set()
            self._thread.join()
            self._sample()

    def read(self) -> Cost:
        """The cost so far."""
        wall = self.ran_s + max(0.0, time.time() - self.t0)
        with self._lock:
            gpus = sorted(self.gpu_peak)
            host, peaks = self.host_peak, dict(self.gpu_peak)
        energy = None
        if gpus and self._tree is not None:
            now = _energy(self._tree.nvml)
            energy = sum(now[i] - self._energy0[i] for i in gpus if i in now and i in self._energy0) / 1000
            energy += self.energy_before
        return {"wall_s": round(wall, 3), "host_peak": host, "gpu_peak": peaks,
                "gpu_hours": wall * len(gpus) / 3600 if gpus else None, "energy_j": energy}


def _last_cost(events: Any, tail: int = 1 << 18) -> dict[str, Any]:
    """The last `cost` figures in a run's log (its earlier processes'), from its last 256 KiB; {} if none."""
    try:
        with open(events, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - tail))
            lines = f.read().splitlines()
    except (OSError, TypeError):
        return {}
    for line in reversed(lines):
        if b'"cost"' not in line:
            continue
        try:
            cost = json.loads(line).get("cost")
        except (ValueError, AttributeError):
            continue
        if isinstance(cost, dict):
            return cost
    return {}


def _run_root(run_dir: Any, pid: Any) -> int:
    """The run's top process: run.json's pid when it is this process or an ancestor (a DDP rank's
    parent), else the furthest ancestor started on this run directory (`python -m trainconsole.trainers
    RUN_DIR`),
    else this process (training called in-process, as in some tests)."""
    import psutil

    try:
        chain = [psutil.Process(), *psutil.Process().parents()]
    except psutil.Error:
        return os.getpid()
    if isinstance(pid, int) and pid in {p.pid for p in chain}:
        return pid
    path, root = str(getattr(run_dir, "path", "") or ""), os.getpid()
    for proc in chain:
        try:
            if path and path in proc.cmdline():
                root = proc.pid
        except psutil.Error:
            continue
    return root


def _energy(nvml: Any) -> dict[str, int]:
    """Each GPU's energy counter in mJ since the driver loaded (NVML), by index; {} without a GPU."""
    if nvml is None:
        return {}
    counters = {}
    for index in range(nvml.nvmlDeviceGetCount()):
        try:
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            counters[str(index)] = int(nvml.nvmlDeviceGetTotalEnergyConsumption(handle))
        except Exception:  # noqa: BLE001 - NVMLError_NotSupported on older GPUs: no figure
            continue
    return counters
