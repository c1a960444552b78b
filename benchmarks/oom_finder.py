"""Batch-size finders compared by how many training steps they spend and what batch they return.

The memory limit is simulated (a batch fits when it is <= the largest that fits), so the count of trials
is exact and the comparison needs no machine time:
- trainconsole (trainconsole/trainers/builtin/batch_finder.search): double from 1, bisect to within 5 %, one
step a
  trial, keep 90 %;
- Lightning's `scale_batch_size(mode="binsearch")`: double from 2, then bisect until high - low <= 1,
  3 steps a trial (its `steps_per_trial` default), at most 25 trials;
- halving (accelerate's `find_executable_batch_size` as the issue describes it): start at 128 (its
  default `starting_batch_size`), halve on every failure, one step a trial.
Run: `.venv/bin/python benchmarks/oom_finder.py`.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from trainconsole.trainers.builtin.batch_finder import MARGIN, search  # noqa: E402

LIMIT = 100_000  # samples per process: never the bound here


def ours(fit: int) -> tuple[int, int]:
    trials: list[int] = []
    low = search(lambda b: trials.append(b) or b <= fit, LIMIT)
    return max(1, int(low * MARGIN)), len(trials)


def lightning(fit: int, init: int = 2, max_trials: int = 25) -> tuple[int, int]:
    """Lightning's _run_binary_scaling: only successful trials count towards max_trials."""
    trials = successes = 0
    low, high, size = 1, None, init
    while True:
        trials += 1
        if size <= fit:
            successes += 1
            low = size
            if successes >= max_trials or (high is not None and high - low <= 1):
                break
            size = size * 2 if high is None else (high + low) // 2
        else:
            high = size
            size = (high + low) // 2
            if high - low <= 1:
                break
    return low, trials * 3


def halving(fit: int, start: int = 128) -> tuple[int, int]:
    size, trials = start, 1
    while size > fit and size > 1:
        size, trials = size // 2, trials + 1
    return size, trials


def main() -> None:
    print(f"{'fits up to':>10} | {'ours: batch, steps':>18} | {'lightning: batch, steps':>23} | "
          f"{'halving from 128: batch, steps':>30}")
    for fit in (24, 100, 300, 1000, 3000, 10_000):
        o, li, h = ours(fit), lightning(fit), halving(fit)
        print(f"{fit:>10} | {o[0]:>10}, {o[1]:>6} | {li[0]:>14}, {li[1]:>7} | {h[0]:>21}, {h[1]:>7}")


if __name__ == "__main__":
    main()
