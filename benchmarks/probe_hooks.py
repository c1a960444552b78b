"""The probe's cost per step, A/B in one process: a small CPU training loop (benchmarks/probe_steps.py's
model, batches of 16 from a DataLoader) timed in chunks, alternately bare and with the probe's hooks
installed as in a script run (`install`), then taken off again. Alternating chunks a second apart, in one
process, keeps a loaded machine's swings out of the ratio (between two processes they are ±30 %).

    .venv/bin/python benchmarks/probe_hooks.py [--chunks 15] [--steps 600] [--cpu] [--sweep]

--probe FILE measures another version of the probe (`git show REV:PATH > FILE`). --sweep measures four
step sizes, from the smallest (a 64-wide MLP on batches of 16) to an MNIST-sized MLP's.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch import nn
from torch.optim import optimizer as optim_module
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data import dataloader as data_module

PROBE = Path(__file__).resolve().parent.parent / "trainconsole/trainers/scripts/inject/_trainconsole_probe.py"


def originals() -> dict[tuple[object, str], object]:
    """What `install` replaces, to put back."""
    return {(owner, name): getattr(owner, name) for owner, name in (
        (torch.Tensor, "backward"), (data_module.DataLoader, "__iter__"),
        (data_module._BaseDataLoaderIter, "__next__"), (nn.Module, "train"),
        (torch.amp.GradScaler, "scale"), (sys, "excepthook"))}


def install(folder: str) -> None:
    """The probe's hooks, as sitecustomize installs them."""
    spec = importlib.util.spec_from_file_location("_trainconsole_probe", PROBE)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    module.install(torch, folder)


def uninstall(saved: dict[tuple[object, str], object]) -> None:
    """Take the hooks off (the step hook from torch's global table, the wrappers back to torch's)."""
    optim_module._global_optimizer_post_hooks.clear()
    for (owner, name), value in saved.items():
        setattr(owner, name, value)
    for stream in (sys.stdout, sys.stderr):
        stream.__dict__.pop("write", None)


CLOCK = time.perf_counter  # --cpu: the thread's CPU time (a loaded machine's waits left out)


def chunk(steps: int, model: nn.Module, opt: torch.optim.Optimizer, loader: DataLoader) -> float:
    """Steps/s of STEPS training steps."""
    done, start = 0, CLOCK()
    while done < steps:
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            done += 1
            if done >= steps:
                break
    return steps / (CLOCK() - start)


#: --sweep: (inputs, width, batch) from the smallest step up to an MNIST-sized MLP's.
SWEEP = ((64, 64, 16), (128, 128, 32), (256, 256, 64), (784, 256, 64))


def measure(chunks: int, steps: int, inputs: int, width: int, batch: int) -> tuple[float, float, float]:
    """Alternate bare and probed chunks of one model; the medians (steps/s) and the pairwise median."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(inputs, width), nn.ReLU(), nn.Linear(width, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(TensorDataset(torch.randn(4096, inputs), torch.randint(0, 10, (4096,))),
                        batch_size=batch, shuffle=True)
    saved, bare, probed = originals(), [], []
    chunk(steps, model, opt, loader)  # warm-up
    with tempfile.TemporaryDirectory() as folder:
        for i in range(chunks):
            if i % 2:  # every other pair the probed chunk first: a drift in the machine's load cancels
                install(folder)
                probed.append(chunk(steps, model, opt, loader))
                uninstall(saved)
            bare.append(chunk(steps, model, opt, loader))
            if not i % 2:
                install(folder)
                probed.append(chunk(steps, model, opt, loader))
                uninstall(saved)
    pairwise = statistics.median(p / q for p, q in zip(probed, bare, strict=True))
    return statistics.median(probed), statistics.median(bare), pairwise


def main() -> None:
    """Alternate bare and probed chunks; print the medians, their ratio and the cost per step."""
    global CLOCK, PROBE
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=15)
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--cpu", action="store_true", help="time by the thread's CPU time, not the wall's")
    parser.add_argument("--sweep", action="store_true", help="four step sizes, smallest to MNIST-sized")
    parser.add_argument("--size", help="one step size: INPUTS,WIDTH,BATCH (default the smallest: 64,64,16)")
    parser.add_argument("--probe", default=str(PROBE), help="the probe file to measure (another version's)")
    args = parser.parse_args()
    PROBE = Path(args.probe)
    CLOCK = time.thread_time if args.cpu else time.perf_counter
    torch.set_num_threads(1)
    sizes = SWEEP if args.sweep else [tuple(map(int, args.size.split(",")))] if args.size else SWEEP[:1]
    for inputs, width, batch in sizes:
        a, b, pairwise = measure(args.chunks, args.steps, inputs, width, batch)
        print(f"MLP {inputs}-{width}-10, batch {batch}: {1e6 / b:.0f} us a step; probe {a:.0f} steps/s, "
              f"bare {b:.0f} steps/s, ratio {a / b:.3f} ({1e6 * (1 / a - 1 / b):+.1f} us/step); "
              f"pairwise ratios median {pairwise:.3f}", flush=True)


if __name__ == "__main__":
    main()
