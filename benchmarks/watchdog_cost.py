"""What a run's watchdog (heartbeat + request polling) costs its top process, in CPU time.

The main thread sleeps for `--seconds` twice, once without and once with the watchdog thread running on a
scratch run directory; the process's CPU time (user + system) over each window is the figure. CPU time
counts only what this process used, so it holds on a loaded machine where wall-clock rates swing.

    .venv/bin/python benchmarks/watchdog_cost.py [--seconds 20] [--interval 5]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from trainconsole.protocol import RunDir  # noqa: E402
from trainconsole.trainers.lifecycle.watchdog import Watchdog  # noqa: E402


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def window(seconds: float) -> float:
    before = cpu()
    time.sleep(seconds)
    return cpu() - before


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--interval", type=float, default=5.0, help="heartbeat interval (the default: 5 s)")
    args = parser.parse_args()
    os.environ["TRAINCONSOLE_HEARTBEAT_S"] = str(args.interval)
    with tempfile.TemporaryDirectory() as tmp:
        run = RunDir(Path(tmp) / "run")
        run.path.mkdir()
        idle = window(args.seconds)
        dog = Watchdog.start(run)
        watched = window(args.seconds)
        dog.close()
    extra, span = watched - idle, args.seconds
    print(f"idle {idle * 1e3:.1f} ms CPU, with the watchdog {watched * 1e3:.1f} ms CPU over {span:.0f} s "
          f"(heartbeat every {args.interval:g} s, requests polled every 1 s): "
          f"{extra / span * 1e3:.2f} ms of CPU per second ({extra / span * 100:.3f} % of a core)")


if __name__ == "__main__":
    main()
