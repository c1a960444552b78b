"""Tuning overhead: the wall time of a 16-trial search against the same trainings' own times.

A trial's own time is its set-up and epochs, timed inside the worker after the imports (`time_s` of its
last `trial` event), taken from the run with worker reuse (warm workers): the same 16 configurations
(seed 0) train in both runs. ideal = sum of those own times / concurrency; the search loop's wall time
runs from the tune run's `started` event (Ray is up) to its `finished` event; per-trial overhead =
(wall - ideal) * concurrency / trials. Reuse off: every trial starts a fresh worker process that
imports torch (and scikit-learn, for digits) again. Also: Ray's start-up and a refused config's exit.

    .venv/bin/python benchmarks/tune_overhead.py [--samples 16] [--max-t 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time

from tune_common import DEMO, EXE, REPO, Search, machine, search

CONCURRENCY = 2


def own_times(found: Search) -> float:
    """The sum of the trials' own times."""
    return sum(t["time_s"] or 0.0 for t in found.trials.values())


def loop_wall(found: Search) -> float:
    """Seconds from the `started` event (Ray is up) to `finished`."""
    return found.event("finished")["t"] - found.event("started")["t"]


def refusal_s() -> float:
    """Seconds for `trainconsole tune` to refuse a bad search (exit 2, before Ray)."""
    with tempfile.TemporaryDirectory() as home:
        began = time.monotonic()
        out = subprocess.run([EXE, "tune", DEMO, "--set", "tune.num_samples=0"], capture_output=True,
                             cwd=REPO, env={**os.environ, "TRAINCONSOLE_HOME": home})
        assert out.returncode == 2
        return time.monotonic() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=16)
    parser.add_argument("--max-t", type=int, default=2)
    args = parser.parse_args()
    print(machine())
    print(f"refused config: exit 2 after {refusal_s():.2f} s")
    common = [f"tune.num_samples={args.samples}", f"tune.max_t={args.max_t}", "tune.scheduler='none'",
              f"tune.max_concurrent={CONCURRENCY}"]
    found = {reuse: search(*common, f"tune.reuse_actors={reuse}") for reuse in ("true", "false")}
    ideal = own_times(found["true"]) / CONCURRENCY
    for reuse, run in found.items():
        wall = loop_wall(run)
        per_trial = (wall - ideal) * CONCURRENCY / len(run.trials)
        print(f"reuse_actors={reuse}: {len(run.trials)} trials x {args.max_t} epochs, {CONCURRENCY} at once;"
              f" search loop {wall:.1f} s vs ideal {ideal:.1f} s (x{wall / ideal:.2f}); per-trial overhead "
              f"{per_trial:.2f} s; trials' own times here {own_times(run):.1f} s; ray.init "
              f"{run.event('started')['ray_init_s']:.1f} s; CLI wall {run.wall_s:.1f} s")


if __name__ == "__main__":
    main()
