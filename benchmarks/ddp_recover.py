"""The cost of in-run OOM recovery under DDP on a real model: resnet18, 2 ranks, `train.oom = "recover"`
vs `"fail"` vs bare DDP, no OOM happening (what every step pays for being able to recover).

With `recover`, a rank's backward keeps its gradients local (DDP's `no_sync`) and the step ends with one
flat all-reduce of all gradients, after a MIN all-reduce that tells every rank whether any rank failed;
with `fail`, DDP's own bucketed all-reduce overlaps backward. Cases, run alternately (--reps times each;
medians compared, so drift hits all of them alike):
- bare:    benchmarks/bare_ddp.py, `mp.spawn` + gloo + DDP, 2 ranks x 1 thread, batch 32 per rank;
- recover: `trainconsole run`, strategy ddp, devices 2, train.threads 1, global batch 64, oom "recover";
- fail:    the same with oom "fail".
All train torchvision's resnet18 (BatchNorm) with SGD on synthetic 3x32x32 images; trainconsole's rate
comes from the run's own `step` events after the warm-up steps, within the first epoch.

    .venv/bin/python benchmarks/ddp_recover.py [--reps 3]
"""

from __future__ import annotations

from run_rates import measure

WARMUP, STEPS, BATCH_PER_RANK, RANKS, SAMPLES = 5, 85, 32, 2, 4096
DATA = ['model.name="resnet18"', 'data.name="synthetic"', "data.shape=[3,32,32]", f"data.samples={SAMPLES}",
        "data.val_fraction=0.2", "train.epochs=1", f"train.max_steps={STEPS}",
        f"train.batch_size={BATCH_PER_RANK * RANKS}", 'strategy.name="ddp"', f"strategy.devices={RANKS}",
        'strategy.accelerator="cpu"', "train.threads=1"]
CASES = {"recover": [*DATA, 'train.oom="recover"'], "fail": [*DATA, 'train.oom="fail"']}
BARE = ["--ranks", str(RANKS), "--threads", "1", "--batch-size", str(BATCH_PER_RANK), "--steps",
        str(STEPS - WARMUP), "--warmup", str(WARMUP), "--model", "resnet18", "--shape", "3,32,32",
        "--samples", str(SAMPLES)]


def main() -> None:
    """Alternate the cases, then print each median and the ratios."""
    med = measure(__doc__, BARE, CASES, WARMUP, BATCH_PER_RANK * RANKS)
    print(f"recover / fail: {med['recover'] / med['fail']:.3f}")
    print(f"recover / bare ddp: {med['recover'] / med['bare']:.3f}")
    print(f"fail / bare ddp: {med['fail'] / med['bare']:.3f}")


if __name__ == "__main__":
    main()
