"""What publishing a host's device snapshot costs (issue 37), in CPU time, and what the console's look at
other hosts' snapshots costs.

1. The watchdog of a run (`--runs` registered runs, each this process with a sleeping child) over
   `--seconds` after a 3 s warm-up (a process's first publish, once, starts NVML and reads the process
   table): its publishing off (the baseline: the same watchdog with `_publish` a no-op), on with no
   console looking (every 10 s), and on with one looking (`devices/.watched` touched every 5 s: every
   2 s), alternating `--reps` times; the process's CPU time over each window is the figure.
2. One publish alone (median of many), and the process-table pass without a GPU (every FAMILY_S).
3. A process that does not hold the host's lock: its tick (a failed `flock` every 2 s).
4. The console's look at `--hosts` unchanged snapshots (a `stat` each) and at changed ones (a read each).

CPU time counts only this process, so it holds on a loaded machine where wall-clock rates swing.

    .venv/bin/python benchmarks/device_publish.py [--seconds 20] [--reps 2] [--runs 3] [--hosts 10]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from trainconsole.console.services.host_devices import OtherHosts  # noqa: E402
from trainconsole.protocol import RunDir, device_publish, host_devices, nvml, processes  # noqa: E402
from trainconsole.trainers.lifecycle.watchdog import Watchdog  # noqa: E402


def cpu() -> float:
    """This process's CPU time (user + system), seconds."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def watchdog_window(home: Path, seconds: float, publish: bool, watched: bool = False) -> float:
    """CPU seconds of a watchdog over `seconds`, publishing or not, with a console looking or not."""
    run = RunDir(home / "runs" / f"bench-{publish}-{time.monotonic_ns()}")
    run.path.mkdir(parents=True)
    run.write_info({"id": run.id, "name": "bench"})
    if not publish:
        Watchdog._publish = lambda self: None  # type: ignore[method-assign]
    dog = Watchdog.start(run)
    time.sleep(WARM_S)  # its first publish (NVML's start, the first pass over the process table) is once
    before = cpu()
    for _ in range(round(seconds / host_devices.WATCH_EVERY_S)):
        if watched:  # as a console looking at the devices pane does
            host_devices.watch(home)
        time.sleep(host_devices.WATCH_EVERY_S)
    spent = cpu() - before
    dog.close()
    Watchdog._publish = ORIGINAL  # type: ignore[method-assign]
    return spent


ORIGINAL = Watchdog._publish
WARM_S = 3.0


def _ms(values: list[float]) -> str:
    return "[" + ", ".join(f"{v * 1e3:.1f}" for v in values) + "]"


def per_call(fn: object, n: int) -> float:
    """Median CPU seconds of one call, over batches."""
    batches = []
    for _ in range(5):
        before = cpu()
        for _ in range(n):
            fn()  # type: ignore[operator]
        batches.append((cpu() - before) / n)
    return statistics.median(batches)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3, help="registered runs on the host")
    parser.add_argument("--hosts", type=int, default=10, help="snapshots the console looks at")
    args = parser.parse_args()
    children = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
                for _ in range(args.runs)]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            run_all(Path(tmp), args)
    finally:
        for child in children:
            child.kill()
            child.wait()


def run_all(home: Path, args: argparse.Namespace) -> None:
    """Every measurement, printed."""
    me = os.getpid()
    for k in range(args.runs):  # each "run" is this process (its children are theirs)
        device_publish.register(home, "bench-host", f"run-{k}", me, processes.own_start_time(), f"r{k}")
    reader = device_publish.reader()
    name = "NVML" if isinstance(reader, nvml.Nvml) and reader.available else reader.note or "simulated"
    family = len(device_publish.trees([me])[me])
    print(f"reader: {name}, {args.runs} registered runs, {family} processes in each family")
    off, idle, watched = [], [], []
    for _ in range(args.reps):
        off.append(watchdog_window(home, args.seconds, publish=False))
        idle.append(watchdog_window(home, args.seconds, publish=True))
        watched.append(watchdog_window(home, args.seconds, publish=True, watched=True))
    base = statistics.median(off)
    print(f"watchdog over {args.seconds:g} s, ms CPU: without publishing {_ms(off)}, publishing with no "
          f"console looking {_ms(idle)}, with a console looking {_ms(watched)}")
    for name, found in (("no console looking (every 10 s)", idle),
                        ("a console looking (every 2 s)", watched)):
        extra = (statistics.median(found) - base) / args.seconds
        print(f"  publishing, {name}: +{extra * 1e3:.2f} ms of CPU per second "
              f"(ratio of medians to the watchdog alone {statistics.median(found) / max(base, 1e-9):.2f})")
    publisher = device_publish.Publisher(home, "bench-host")
    publisher.snapshot()
    one = per_call(publisher.publish, 50)
    table = per_call(lambda: device_publish.trees([me]), 5)
    every = host_devices.EVERY_S
    print(f"one publish {one * 1e3:.2f} ms CPU (every {every:g} s: {one / every * 1e3:.2f} ms/s); "
          f"the process table pass {table * 1e3:.2f} ms (no GPU, every {device_publish.FAMILY_S:g} s: "
          f"{table / device_publish.FAMILY_S * 1e3:.2f} ms/s)")
    holder = device_publish.Publisher(home, "bench-host")
    assert holder.tick()
    waiting = device_publish.Publisher(home, "bench-host", every_s=0.0)
    tried = per_call(lambda: waiting._take(), 200)
    print(f"a process without the lock: {tried * 1e6:.0f} us CPU per try (one every {every:g} s)")
    holder.close()
    look(home, args.hosts)


def look(home: Path, count: int) -> None:
    """The console's look at `count` other hosts' snapshots."""
    reading = nvml.simulated(8, [f"run-{k}" for k in range(4)])
    for k in range(count):
        host_devices.write(home, host_devices.HostSnapshot(f"host-{k}", time.time(), reading.gpus,
                                                           nvml.Host(1, 2), "", {}))
    others = OtherHosts(home, "bench-host")
    changed = per_call(lambda: (others._seen.clear(), others.look(time.time())), 20)
    same = per_call(lambda: others.look(time.time()), 200)
    print(f"console, {count} hosts of 8 GPUs: a look with nothing changed {same * 1e6:.0f} us CPU "
          f"(every 0.5 s while the pane shows: {same / 0.5 * 1e3:.2f} ms/s), every file changed "
          f"{changed * 1e6:.0f} us")


if __name__ == "__main__":
    main()
