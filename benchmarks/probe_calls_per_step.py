"""Python function calls per training step, bare and with a probe installed (cProfile's count: unlike a
time, it does not depend on how loaded the machine is). 100 steps of a 64-64-10 MLP on batches of 16 from
a DataLoader, SGD.

    .venv/bin/python benchmarks/probe_calls_per_step.py [PROBE_FILE]   # default: the current probe
"""

from __future__ import annotations

import cProfile
import importlib.util
import pstats
import sys
import tempfile
from pathlib import Path

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

PROBE = Path(__file__).resolve().parent.parent / "trainconsole/trainers/scripts/inject/_trainconsole_probe.py"


def calls_per_step(probe: str | None) -> float:
    """The calls of one pass over 100 batches, per step (after a first pass: no first-step work counted)."""
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(torch.randn(1600, 64), torch.randint(0, 10, (1600,))), batch_size=16)

    def one_pass() -> None:
        for x, y in loader:
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()

    if probe:
        spec = importlib.util.spec_from_file_location("_probe", probe)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        module.install(torch, tempfile.mkdtemp())
    one_pass()
    profile = cProfile.Profile()
    profile.enable()
    one_pass()
    profile.disable()
    return pstats.Stats(profile).total_calls / len(loader)  # type: ignore[attr-defined]


if __name__ == "__main__":
    bare = calls_per_step(None)
    probed = calls_per_step(sys.argv[1] if len(sys.argv) > 1 else str(PROBE))
    print(f"calls a step: bare {bare:.2f}, probed {probed:.2f} (+{probed - bare:.2f})")
