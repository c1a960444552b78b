"""`trainconsole devices [--json] [--publish]`: every host of the home with its devices, whose runs hold
them, what is free, and how old each host's snapshot is (`protocol/host_devices.py`).

`--json` prints one array, an object per host after gpustat's `--json` (and nitop's) names: `hostname`,
`query_time`, `gpus` with `index`, `name`, `memory.used`, `memory.total` (MiB), `utilization.gpu`,
`temperature.gpu`, `power.draw` and `processes` (`pid`, `run`: a run id of this home or null for
another's, `name`, `gpu_memory_usage` in MiB); and ours: `this_host`, `age_s`, `stale`, `note`, `memory.*`
(the host's, MiB) and `runs` (each run's GPU memory and, without a GPU, its RSS).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from types import FrameType
from typing import Any

from trainconsole import protocol
from trainconsole.protocol import device_publish, host_devices
from trainconsole.protocol.host_devices import HostSnapshot
from trainconsole.protocol.places import host as hosts

MIB = 1 << 20
OTHER = "other"


def add_parser(sub: Any) -> Callable[[argparse.Namespace], int]:
    """The `devices` command's parser; returns the command."""
    cmd = sub.add_parser("devices", help="every host of the home: its GPUs (or memory), runs on them, age")
    cmd.add_argument("--json", action="store_true", help="a JSON array, an object per host (gpustat's names)")
    cmd.add_argument("--publish", action="store_true",
                     help="publish this host's devices every 2 s until killed (for a host with no run)")
    return cmd_devices


def cmd_devices(args: argparse.Namespace) -> int:
    """Print every host's devices, or publish this one's."""
    home = protocol.home()
    if args.publish:
        return publish(home)
    now, here = time.time(), hosts.this_host()
    found = snapshots(home, now, here)
    if args.json:
        print(json.dumps([to_json(s, now, here) for s in found], indent=2))
    else:
        print("\n".join(line for s in found for line in lines(s, now, here)))
    return 0


def snapshots(home: Any, now: float, here: str) -> list[HostSnapshot]:
    """Every host's snapshot, this host's first: read live where its own is missing or stale."""
    found = host_devices.read_all(home, now, here)
    if not found or found[0].host != here or found[0].stale(now):
        live = device_publish.Publisher(home, here).snapshot()
        found = [live, *(s for s in found if s.host != here)]
    return found


def publish(home: Any) -> int:
    """`--publish`: this host's snapshot every 2 s while this process holds the host's lock, until a
    SIGTERM or SIGINT; while another process of the host publishes, it waits to take over."""
    publisher = device_publish.Publisher(home, hosts.this_host())
    stopping: list[int] = []

    def stop(signum: int, frame: FrameType | None) -> None:
        stopping.append(signum)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, stop)
    print(f"publishing this host's devices to {host_devices.path(home, publisher.host)} every "
          f"{host_devices.EVERY_S:g} s (Ctrl-C or SIGTERM ends it)", file=sys.stderr, flush=True)
    while not stopping:
        publisher.tick()
        time.sleep(0.25)
    publisher.close()
    return 0


def to_json(snap: HostSnapshot, now: float, here: str) -> dict[str, Any]:
    """One host in gpustat's shape, with ours beside it."""
    mem = snap.memory
    out: dict[str, Any] = {
        "hostname": snap.host, "this_host": snap.host == here,
        "query_time": datetime.fromtimestamp(snap.t, UTC).isoformat(),
        "age_s": round(snap.age(now), 1), "stale": snap.stale(now), "note": snap.note,
        "memory.used": None if mem is None else mem.used // MIB,
        "memory.total": None if mem is None else mem.total // MIB,
        "memory.free": None if mem is None else (mem.total - mem.used) // MIB,
        "gpus": [{"index": g.index, "name": g.name, "memory.used": g.used // MIB,
                  "memory.total": g.total // MIB, "utilization.gpu": g.util, "temperature.gpu": g.temp,
                  "power.draw": g.power,
                  "processes": _processes(snap, g)} for g in snap.gpus],
    }
    rss = dict(mem.by_run) if mem is not None else {}
    gpu_mem: dict[str, int] = {}
    for g in snap.gpus:
        for run, used in g.by_run:
            gpu_mem[run] = gpu_mem.get(run, 0) + used
    out["runs"] = [{"run": run, "name": snap.names.get(run, run),
                    "gpu_memory_usage": gpu_mem.get(run, 0) // MIB,
                    "rss": None if run not in rss else rss[run] // MIB}
                   for run in sorted(set(snap.names) | set(rss) | set(gpu_mem))]
    return out


def _processes(snap: HostSnapshot, gpu: Any) -> list[dict[str, Any]]:
    """A GPU's processes; a snapshot without them (a simulated NVML) gives each run's share, no pid."""
    procs = [(p.pid, p.run, p.used) for p in gpu.procs] or [(None, run, used) for run, used in gpu.by_run]
    return [{"pid": pid, "run": run, "name": OTHER if run is None else snap.names.get(run, run),
             "gpu_memory_usage": used // MIB} for pid, run, used in procs]


def lines(snap: HostSnapshot, now: float, here: str) -> list[str]:
    """A host as text: a heading (age, free memory), then a line per GPU and its runs' shares."""
    from .core.board import human_bytes  # (here: the board's imports are not the CLI parser's)

    age = f"{snap.age(now):.0f}s ago" + (" (stale: silent longer than a heartbeat may be)" if snap.stale(now)
                                         else "")
    mem = snap.memory
    memory = "" if mem is None else (
        f"  memory {human_bytes(mem.total - mem.used)} free of {human_bytes(mem.total)}")
    out = [f"{snap.host}{' (this host)' if snap.host == here else ''}  {age}{memory}"]
    if snap.note and not snap.gpus:
        out.append(f"  {snap.note}")
    for g in snap.gpus:
        figures = [f"util {g.util}%" if g.util is not None else "",
                   f"{g.temp}C" if g.temp is not None else "",
                   f"{g.power:.0f}W" if g.power is not None else ""]
        out.append(f"  GPU{g.index} {g.name}  {human_bytes(g.used)}/{human_bytes(g.total)}, "
                   f"{human_bytes(g.total - g.used)} free  {' '.join(f for f in figures if f)}".rstrip())
        out.extend(f"    {snap.names.get(run, run)}  {human_bytes(used)}" for run, used in g.by_run)
    if not snap.gpus and mem is not None:
        out.extend(f"    {snap.names.get(run, run)}  rss {human_bytes(rss)}" for run, rss in mem.by_run)
    return out
