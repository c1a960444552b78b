"""What the per-epoch `histogram` event costs: `trainconsole.trainers.builtin.histograms.compact` against one
training step of
the same model, and the event's size.

Models: small_cnn on 3×32×32 (batch 128) and torchvision resnet18 at 32×32 (batch 64), SGD, on the CPU
(or `--device cuda`). Each figure is the median of `--reps` timings; a training epoch of the digits demo is
23 steps and of the synthetic resnet18 example 32, so the cost per epoch is the ratio over that many steps.
Run: `.venv/bin/python benchmarks/histogram_cost.py [--reps 7] [--device cpu]`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def timed(fn: object, reps: int, sync: object) -> float:
    fn()  # warm-up
    times = []
    for _ in range(reps):
        sync()
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(name: str, model: object, batch: int, device: object, reps: int) -> str:
    """One model's line: histogram time, training step time, their ratio, the event's size."""
    import torch
    import torch.nn.functional as F

    from trainconsole.trainers.builtin import histograms

    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    model = model.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(batch, 3, 32, 32, device=device)
    y = torch.randint(0, 10, (batch,), device=device)

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        opt.step()

    step_s = timed(step, reps, sync)
    hist_s = timed(lambda: histograms.compact(model), reps, sync)
    size = len(json.dumps(histograms.compact(model), separators=(",", ":")))
    params = sum(p.numel() for p in model.parameters())
    return (f"{name} ({params:,} params, {len(list(model.parameters()))} tensors): histograms "
            f"{hist_s * 1e3:.1f} ms, one training step {step_s * 1e3:.1f} ms -> {hist_s / step_s:.3f} "
            f"steps; event {size:,} bytes")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    import torch
    import torchvision

    from trainconsole.trainers.builtin.models import small_cnn

    device = torch.device(args.device)
    print(measure("small_cnn", small_cnn((3, 32, 32), 10), 128, device, args.reps), flush=True)
    model = torchvision.models.resnet18(weights=None, num_classes=10)
    print(measure("resnet18", model, 64, device, args.reps), flush=True)


if __name__ == "__main__":
    main()
