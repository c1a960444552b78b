"""Memory of a tune run's Ray: its processes while idle (Ray up, no trial), and a trial's worker.

Starts Ray exactly as a tune run does (`trainconsole.trainers.tune.session.start`), waits, and sums RSS and
PSS (shared
pages split between the processes that map them) over every process it started; then runs a short
search and reads the trial workers' RSS from the `trial` events (`mem.rss`).

    .venv/bin/python benchmarks/tune_memory.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import psutil
from tune_common import machine, search

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from trainconsole.trainers.tune import session  # noqa: E402

MIB = 1 << 20


def idle_memory(settle_s: float = 10.0) -> list[tuple[str, int, int]]:
    """(name, rss, pss) of this driver and every process of an idle local Ray started like a tune run's."""
    with tempfile.TemporaryDirectory(prefix="tc-mem-") as run_path:
        tune_cfg = {"max_concurrent": 2, "cpus_per_trial": 1.0}
        folder = session.start(Path(run_path), tune_cfg, "")
        try:
            time.sleep(settle_s)
            me = psutil.Process().memory_full_info()
            rows = [("driver (ray imported)", me.rss, me.pss)]
            for proc in psutil.Process().children(recursive=True):
                try:
                    full = proc.memory_full_info()
                    rows.append((proc.name(), full.rss, full.pss))
                except psutil.Error:
                    continue
            return rows
        finally:
            session.stop(folder)


def main() -> None:
    print(machine())
    rows = idle_memory()
    for name, rss, pss in sorted(rows, key=lambda r: -r[1]):
        print(f"  {name:<24} rss {rss / MIB:6.0f} MiB  pss {pss / MIB:6.0f} MiB")
    print(f"idle Ray with its driver: {len(rows)} processes, rss {sum(r[1] for r in rows) / MIB:.0f} MiB, "
          f"pss {sum(r[2] for r in rows) / MIB:.0f} MiB")
    found = search("tune.num_samples=4", "tune.max_t=2", "tune.scheduler='none'")
    reported = [e for e in found.events if e["type"] == "trial" and e.get("mem", {}).get("rss")]
    rss = [e["mem"]["rss"] for e in reported]
    print(f"per trial: worker rss {min(rss) / MIB:.0f}-{max(rss) / MIB:.0f} MiB over "
          f"{len({e['trial_id'] for e in reported})} trials (torch, the model and the digits data; "
          "one worker per concurrent trial, reused by the next trial)")


if __name__ == "__main__":
    main()
