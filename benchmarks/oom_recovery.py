"""OOM recovery on a CPU under a real memory cap: time from the OOM to the next completed step, steps
lost, and throughput after recovery against a run started at the recovered micro-batch.

Each case runs in a fresh process (the cap is a per-process rlimit): small_cnn on 1x32x32 inputs, batch
256, SGD, 1 thread, `train.max_memory_mb = 100` (the full batch does not fit), `STEPS` steps through the
trainer's own Stepper (trainconsole/trainers/builtin/step.py), each step timed on the wall clock.
- recover: starts at micro-batch 256, runs out of memory on step 1, recovers to 128 x 2;
- started_at_128: the same cap, started at micro-batch 128 (what a resumed run does);
- uncapped: no cap, micro-batch 256 (the reference loss curve and weights);
- uncapped_128: no cap, micro-batch 128 (separates the cost of accumulating from the cost of the cap).
Run: `.venv/bin/python benchmarks/oom_recovery.py [--reps 3]`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
STEPS, WINDOW = 30, (8, 30)  # throughput over steps 8..29 (after warm-up and recovery)


def case(name: str) -> dict:
    """Run one case in this process; per-step times, losses, recovery timing, a weight checksum."""
    import torch

    from trainconsole.protocol import defaults
    from trainconsole.trainers.builtin.models import small_cnn
    from trainconsole.trainers.builtin.optim import Precision
    from trainconsole.trainers.builtin.step import Stepper
    from trainconsole.trainers.strategies.single import SingleDevice
    from trainconsole.trainers.troubles import memory_cap

    torch.set_num_threads(1)
    config = defaults()
    config["train"].update(batch_size=256, max_memory_mb=0 if name.startswith("uncapped") else 100)
    config["strategy"]["accelerator"] = "cpu"
    strategy = SingleDevice(config)
    torch.manual_seed(0)
    model = small_cnn((1, 32, 32), 10)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(1)
    batches = [(torch.randn(256, 1, 32, 32, generator=g), torch.randint(0, 10, (256,), generator=g))
               for _ in range(STEPS)]
    recoveries: list[float] = []
    stepper = Stepper(model, opt, Precision("fp32", strategy.device, print), strategy, config,
                      lambda kind, **f: recoveries.append(time.perf_counter()), 10)
    if name in ("started_at_128", "uncapped_128"):
        stepper.resume_at(128)
    memory_cap.apply(config["train"]["max_memory_mb"], strategy.device)
    times, losses, ends = [], [], []
    for i, (x, y) in enumerate(batches):
        start = time.perf_counter()
        loss = stepper.step(x, y, i)
        losses.append(float(loss))
        ends.append(time.perf_counter())
        times.append(ends[-1] - start)
    checksum = float(sum(p.detach().double().sum() for p in model.parameters()))
    first_oom = recoveries[0] if recoveries else None
    return {"name": name, "times": times, "losses": losses, "micro_batch": stepper.micro_batch,
            "recoveries": len(recoveries), "checksum": checksum,
            "oom_to_next_step_s": ends[0] - first_oom if first_oom else None}


def run_case(name: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--case", name], capture_output=True, text=True,
                         check=True, cwd=REPO)
    return json.loads(out.stdout.strip().splitlines()[-1])


def rate(result: dict) -> float:
    lo, hi = WINDOW
    return 256 * (hi - lo) / sum(result["times"][lo:hi])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--case")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    if args.case:
        print(json.dumps(case(args.case)))
        return
    rows: dict[str, list[dict]] = {"recover": [], "started_at_128": [], "uncapped": [], "uncapped_128": []}
    for rep in range(args.reps):
        for name in rows:  # alternate the cases, so load on the shared machine hits all alike
            rows[name].append(run_case(name))
        print(f"rep {rep + 1}: " + ", ".join(f"{n} {rate(r[-1]):.0f} samples/s" for n, r in rows.items()))
    rec, at128, free = rows["recover"], rows["started_at_128"], rows["uncapped"]
    normal = statistics.median(statistics.median(r["times"][WINDOW[0]:WINDOW[1]]) for r in at128)
    oom_to_next = statistics.median(r["oom_to_next_step_s"] for r in rec)
    print(f"recoveries per run: {[r['recoveries'] for r in rec]}, final micro-batch {rec[0]['micro_batch']}")
    each = ", ".join(f"{r['oom_to_next_step_s']:.3f}" for r in rec)
    print(f"time from OOM to the next completed step: median {oom_to_next:.3f} s "
          f"(a normal step at micro-batch 128: {normal:.3f} s) [{each}]")
    drift = max(abs(a - b) for a, b in zip(rec[0]["losses"], free[0]["losses"], strict=True))
    print(f"steps lost: {STEPS - len(rec[0]['losses'])} of {STEPS}; max |loss - uncapped loss| over all "
          f"steps {drift:.2e}; weight checksum recover {rec[0]['checksum']:.6f} vs uncapped "
          f"{free[0]['checksum']:.6f}")
    r_rec, r_128, r_free, r_free128 = (statistics.median(rate(r) for r in rs) for rs in rows.values())
    print(f"throughput after recovery {r_rec:.0f} samples/s vs started at 128: {r_128:.0f} -> ratio "
          f"{r_rec / r_128:.3f}; uncapped: full batch {r_free:.0f}, micro-batch 128 {r_free128:.0f} "
          f"(accumulating 2 x 128 / 256: {r_free128 / r_free:.3f}; the cap at 128: {r_128 / r_free128:.3f})")


if __name__ == "__main__":
    main()
