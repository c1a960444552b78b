"""Cold start: from exec of `trainconsole` to its first complete frame on a 120x40 terminal.

Each repeat starts a fresh process on a pseudo-terminal (no import caches shared between repeats
beyond the OS page cache) over a home directory holding `--runs` finished runs.

    .venv/bin/python benchmarks/console_startup.py --repeat 10 --runs 20
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from console_common import Console, machine, make_run


def main() -> None:
    """Print the median, min and max cold start, in seconds, as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--runs", type=int, default=20, help="finished runs in the home directory")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        for i in range(args.runs):
            make_run(home, f"20240101-{i:06d}-small-cnn-digits-{i:04x}", steps=500)
        times = []
        for _ in range(args.repeat):
            console = Console(home)
            times.append(console.wait_first_frame())
            console.quit()
    print(json.dumps({"benchmark": "console cold start to first frame", "runs_in_home": args.runs,
                      "median_s": round(statistics.median(times), 3), "min_s": round(min(times), 3),
                      "max_s": round(max(times), 3), "repeats": args.repeat, "machine": machine()}))


if __name__ == "__main__":
    main()
