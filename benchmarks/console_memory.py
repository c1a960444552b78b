"""Console memory with many runs in the home directory: RSS of the real `trainconsole` once it has read
every run's whole history (it goes idle), and its peak RSS while reading.

    .venv/bin/python benchmarks/console_memory.py --runs 100 --steps 2000
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import psutil
from console_common import Console, finished_runs, machine


def settle(proc: psutil.Process, idle_cpu_s: float = 0.02, timeout: float = 120.0) -> float:
    """Wait until the process uses less than `idle_cpu_s` CPU seconds per 0.5 s twice in a row."""
    began, quiet, last = time.monotonic(), 0, sum(proc.cpu_times()[:2])
    while quiet < 2 and time.monotonic() - began < timeout:
        time.sleep(0.5)
        now = sum(proc.cpu_times()[:2])
        quiet = quiet + 1 if now - last < idle_cpu_s else 0
        last = now
    return time.monotonic() - began


def peak_rss(pid: int) -> int:
    """VmHWM: the most resident memory the process has had."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def main() -> None:
    """Print RSS after loading, peak RSS and the time to load, as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--steps", type=int, default=2000, help="step events per run (+ an eval per epoch)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        finished_runs(home, args.runs, steps=args.steps)
        size = sum(f.stat().st_size for f in home.glob("runs/*/events.jsonl"))
        term = Console(home)
        first = term.wait_first_frame()
        proc = psutil.Process(term.proc.pid)
        loaded = settle(proc)
        rss, peak = proc.memory_info().rss, peak_rss(proc.pid)
        term.quit()
    mib = 1 << 20
    print(json.dumps({"benchmark": "console memory", "runs": args.runs, "events_per_run": args.steps,
                      "event_logs_mib": round(size / mib, 1), "first_frame_s": round(first, 3),
                      "loaded_in_s": round(loaded, 1), "rss_mib": round(rss / mib, 1),
                      "peak_rss_mib": round(peak / mib, 1), "machine": machine()}))


if __name__ == "__main__":
    main()
