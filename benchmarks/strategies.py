"""Strategies benchmark: DDP under trainconsole vs a bare mp.spawn DDP loop, and DDP vs single-device.

Cases, run alternately (--reps times each; medians compared, so drift hits all of them alike):
- bare:   benchmarks/bare_ddp.py, 2 ranks × 1 thread, batch 128 per rank;
- ddp:    `trainconsole run` with strategy ddp, devices 2, train.threads 1, global batch 256;
- single: `trainconsole run` with strategy single, train.threads 2, batch 256 (the same work per step).
All train the small CNN on synthetic 3×32×32 images. trainconsole's rate comes from the run's own `step`
events after the warm-up steps, within the first epoch (no evaluation or checkpoint inside the window).

    .venv/bin/python benchmarks/strategies.py [--reps 3]
"""

from __future__ import annotations

from run_rates import measure

WARMUP, STEPS, BATCH_PER_RANK, RANKS, SAMPLES = 10, 120, 128, 2, 40960
DATA = ['data.name="synthetic"', "data.shape=[3,32,32]", f"data.samples={SAMPLES}", "data.val_fraction=0.2",
        "train.epochs=1", f"train.max_steps={STEPS}", f"train.batch_size={BATCH_PER_RANK * RANKS}"]
CASES = {
    "ddp": [*DATA, 'strategy.name="ddp"', f"strategy.devices={RANKS}", "train.threads=1"],
    "single": [*DATA, 'strategy.name="single"', "train.threads=2"],
}
BARE = ["--ranks", str(RANKS), "--threads", "1", "--batch-size", str(BATCH_PER_RANK), "--steps",
        str(STEPS - WARMUP), "--warmup", str(WARMUP), "--shape", "3,32,32", "--samples", str(SAMPLES)]


def main() -> None:
    """Alternate the cases, then print each median and the ratios."""
    med = measure(__doc__, BARE, CASES, WARMUP, BATCH_PER_RANK * RANKS)
    print(f"ddp / bare ddp: {med['ddp'] / med['bare']:.3f}")
    print(f"ddp (2 x 1 thread) / single (2 threads): {med['ddp'] / med['single']:.3f}")


if __name__ == "__main__":
    main()
