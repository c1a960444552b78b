"""The probe's cost: a script's steps/s under `trainconsole run --script` with the probe (the default)
over the same with `--no-measure`, on a CPU script of small steps (benchmarks/probe_steps.py). The two
alternate, --reps times each; the ratio of medians and the cost per step are printed.

    .venv/bin/python benchmarks/probe_overhead.py [--reps 7] [--steps 4000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXE = str(Path(sys.executable).parent / "trainconsole")
SCRIPT = str(ROOT / "benchmarks" / "probe_steps.py")


def rate(home: str, steps: int, measure: bool) -> tuple[float, int]:
    """One run's steps/s (the script's own figure) and how many probe step events it got."""
    flags = [] if measure else ["--no-measure"]
    out = subprocess.run([EXE, "run", "--script", SCRIPT, *flags, "--wait", "--", "--steps", str(steps)],
                         capture_output=True, text=True, check=True, cwd=ROOT,
                         env={**os.environ, "TRAINCONSOLE_HOME": home})
    run = Path(home) / "runs" / out.stdout.split()[0]
    last = (run / "stdout.log").read_text().strip().splitlines()[-1]
    events = [json.loads(line) for line in (run / "events.jsonl").open()]
    return json.loads(last)["steps_per_s"], sum(e.get("source") == "probe" for e in events)


def main() -> None:
    """Alternate probe and no probe; print both medians, the ratio and the cost per step."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--steps", type=int, default=4000)
    args = parser.parse_args()
    on: list[float] = []
    off: list[float] = []
    with tempfile.TemporaryDirectory() as home:
        for _ in range(args.reps):
            off.append(rate(home, args.steps, False)[0])
            steps_per_s, probe_events = rate(home, args.steps, True)
            on.append(steps_per_s)
    a, b = statistics.median(on), statistics.median(off)
    print(f"probe {a:.0f} steps/s {[round(r) for r in on]}, no probe {b:.0f} steps/s "
          f"{[round(r) for r in off]}, ratio {a / b:.3f}, {1e6 * (1 / a - 1 / b):+.1f} us/step "
          f"({probe_events} probe step events in the last run)")


if __name__ == "__main__":
    main()
