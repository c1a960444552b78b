"""Per step, the probe's three per-step hooks (optimizer step, loss, batch) as its wrappers call them, in
one process: `timeit`, best of 3 x 50,000, five alternations of OLD (a probe file from git, called as that
version's wrappers called it: `on_step(opt, args, kwargs)` and `_quiet`) and the current file.

    git show REV:trainconsole/trainers/scripts/inject/_trainconsole_probe.py > /tmp/old_probe.py
    .venv/bin/python benchmarks/probe_hook_calls.py /tmp/old_probe.py
"""

from __future__ import annotations

import importlib.util
import statistics
import sys
import tempfile
import timeit
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import torch

NEW = Path(__file__).resolve().parents[1] / "trainconsole" / "trainers" / "scripts" / "inject" / \
    "_trainconsole_probe.py"


def load(path: str | Path, name: str) -> ModuleType:
    """The probe module at `path`, loaded under `name` (two versions side by side)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def one_step(module: ModuleType, old: bool) -> Callable[[], None]:
    """What the probe runs per step: its three hooks, as that version's wrappers call them."""
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = model(torch.randn(16, 4)).sum()
    batch = [torch.randn(16, 4), torch.randint(0, 2, (16,))]
    probe = module.Probe(torch, tempfile.mkdtemp())
    probe.state.due = float("inf")  # no record sent: the per-step part alone

    def old_step() -> None:
        probe.on_step(opt, (), {})
        module._quiet(probe.on_loss, loss)
        module._quiet(probe.on_batch, batch)

    if not old:  # (as after an optimizer's first step: no hand-written updates watched)
        probe.state.first_begun = True

    def new_step() -> None:
        calls = ((probe.on_step, (opt,)), (probe.on_backward, (loss,)), (probe.on_batch, (None, batch)))
        for call, args in calls:
            try:
                call(*args)
            except Exception:  # noqa: BLE001, S110 - as the wrappers do
                pass

    return old_step if old else new_step


def micros(step: Callable[[], None]) -> float:
    return min(timeit.repeat(step, number=50_000, repeat=3)) / 50_000 * 1e6


def main() -> None:
    torch.set_num_threads(1)
    old, new = load(sys.argv[1], "_probe_old"), load(NEW, "_probe_new")
    got: dict[str, list[float]] = {"old": [], "new": []}
    for _ in range(5):
        got["old"].append(micros(one_step(old, True)))
        got["new"].append(micros(one_step(new, False)))
    print(", ".join(f"{k} {statistics.median(v):.2f} us a step {[round(x, 2) for x in v]}"
                    for k, v in got.items()))


if __name__ == "__main__":
    main()
