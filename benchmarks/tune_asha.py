"""ASHA against no early stopping: the same random search (same seed, so the same 16 configurations and
max_t) run twice on digits; compares the trial-epochs trained and the best validation accuracy.

    .venv/bin/python benchmarks/tune_asha.py [--samples 16] [--max-t 8]
"""

from __future__ import annotations

import argparse

from tune_common import machine, search


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=16)
    parser.add_argument("--max-t", type=int, default=8)
    args = parser.parse_args()
    print(machine())
    budget = args.samples * args.max_t
    common = [f"tune.num_samples={args.samples}", f"tune.max_t={args.max_t}", "tune.seed=0"]
    results = {name: search(*common, f"tune.scheduler='{name}'") for name in ("none", "asha")}
    for name, found in results.items():
        cut = sum(t["status"] == "stopped_early" for t in found.trials.values())
        print(f"{name:>4}: {len(found.trials)} trials, {found.trial_epochs}/{budget} trial-epochs "
              f"({found.trial_epochs / budget:.0%}), {cut} cut early, best val_acc {found.best_val_acc:.4f}, "
              f"wall {found.wall_s:.1f} s")
    full, asha = results["none"], results["asha"]
    print(f"ASHA / full budget: {asha.trial_epochs / budget:.2f} (goal <= 0.40); best val_acc difference: "
          f"{(full.best_val_acc - asha.best_val_acc) * 100:+.2f} points (goal <= 1); wall ratio "
          f"{asha.wall_s / full.wall_s:.2f}")


if __name__ == "__main__":
    main()
