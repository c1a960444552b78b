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
WARMUP, STEPS, BATCH_PER_RANK, RANKS, SAMPLES = 10, 120, 128, 2, 40960
DATA = ['data.name="synthetic"', "data.shape=[3,32,32]", f"data.samples={SAMPLES}", "data.val_fraction=0.2",
        "train.epochs=1", f"train.max_steps={STEPS}", f"train.batch_size={BATCH_PER_RANK * RANKS}"]
CASES = {
    "ddp": [*DATA, 'strategy.name="ddp"', f"strategy.devices={RANKS}", "train.threads=1"],
    "single": [*DATA, 'strategy.name="single"', "train.threads=2"],
}


def bare() -> float:
    """Samples/s of the bare DDP loop (it prints one JSON line)."""
    cmd = [sys.executable, str(ROOT / "benchmarks" / "bare_ddp.py"), "--ranks", str(RANKS), "--threads", "1",
           "--batch-size", str(BATCH_PER_RANK), "--steps", str(STEPS - WARMUP), "--warmup", str(WARMUP),
           "--shape", "3,32,32", "--samples", str(SAMPLES)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])["samples_per_s"]


def under_console(overrides: list[str], home: str) -> float:
    """Samples/s of `trainconsole run --wait`, from its step events after the warm-up steps."""
    sets = [a for o in overrides for a in ("--set", o)]
    out = subprocess.run([EXE, "run", "examples/digits.toml", *sets, "--wait"], capture_output=True,
                         text=True, cwd=ROOT, env={**os.environ, "TRAINCONSOLE_HOME": home}, check=True)
    run_id = out.stdout.split()[0]
    events = [json.loads(line) for line in (Path(home) / "runs" / run_id / "events.jsonl").open()]
    steps = [e for e in events if e["type"] == "step" and e["step"] > WARMUP]
    first, last = steps[0], steps[-1]
    return (last["step"] - first["step"]) * BATCH_PER_RANK * RANKS / (last["t"] - first["t"])


def main() -> None:
    """Alternate the cases, then print each median and the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    rates: dict[str, list[float]] = {"bare": [], **{name: [] for name in CASES}}
    with tempfile.TemporaryDirectory() as home:
        for rep in range(args.reps):
            rates["bare"].append(bare())
            for name, overrides in CASES.items():
                rates[name].append(under_console(overrides, home))
            load = os.getloadavg()[0]  # other work on the machine skews 2-thread runs most: say how busy
            print(f"rep {rep + 1}: " + ", ".join(f"{k} {v[-1]:.0f}" for k, v in rates.items())
                  + f" (load {load:.1f})", flush=True)
    med = {k: statistics.median(v) for k, v in rates.items()}
    for name, values in rates.items():
        print(f"{name}: median {med[name]:.0f} samples/s {[round(v) for v in values]}")
    print(f"ddp / bare ddp: {med['ddp'] / med['bare']:.3f}")
    print(f"ddp (2 x 1 thread) / single (2 threads): {med['ddp'] / med['single']:.3f}")


if __name__ == "__main__":
    main()
