"""The probe's cost per step, A/B in one process: a small CPU training loop (benchmarks/probe_steps.py's
model, batches of 16 from a DataLoader) timed in chunks, alternately bare and with the probe's hooks
installed as in a script run (`install`), then taken off again. Alternating chunks a second apart, in one
process, keeps a loaded machine's swings out of the ratio (between two processes they are ±30 %).

    .venv/bin/python benchmarks/probe_hooks.py [--chunks 15] [--steps 600]
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


def main() -> None:
    """Alternate bare and probed chunks; print the medians, their ratio and the cost per step."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=15)
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--cpu", action="store_true", help="time by the thread's CPU time, not the wall's")
    args = parser.parse_args()
    global CLOCK
    CLOCK = time.thread_time if args.cpu else time.perf_counter
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(TensorDataset(torch.randn(4096, 64), torch.randint(0, 10, (4096,))), batch_size=16,
                        shuffle=True)
    saved, bare, probed = originals(), [], []
    chunk(args.steps, model, opt, loader)  # warm-up
    with tempfile.TemporaryDirectory() as folder:
        for i in range(args.chunks):
            if i % 2:  # every other pair the probed chunk first: a drift in the machine's load cancels
                install(folder)
                probed.append(chunk(args.steps, model, opt, loader))
                uninstall(saved)
            bare.append(chunk(args.steps, model, opt, loader))
            if not i % 2:
                install(folder)
                probed.append(chunk(args.steps, model, opt, loader))
                uninstall(saved)
    a, b = statistics.median(probed), statistics.median(bare)
    print(f"probe {a:.0f} steps/s, bare {b:.0f} steps/s, ratio {a / b:.3f} "
          f"({1e6 * (1 / a - 1 / b):+.1f} us/step); pairwise ratios median "
          f"{statistics.median(p / q for p, q in zip(probed, bare, strict=True)):.3f}")


if __name__ == "__main__":
    main()
