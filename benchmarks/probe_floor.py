"""The floor of any probe built on torch's Python hooks: the same three per-step hooks as the probe (the
optimizer step post-hook, the `Tensor.backward` wrapper, the DataLoader batch wrapper), each doing only a
counter increment. Measured like the probe itself, by `probe_hooks.py`, which loads it in its place:

    .venv/bin/python benchmarks/probe_hooks.py --cpu --sweep --probe benchmarks/probe_floor.py

What it costs a step is what calling into Python from torch's hot path costs, before the probe reads anything.
"""

from __future__ import annotations

from typing import Any


class Counts:
    __slots__ = ("steps", "losses", "batches")

    def __init__(self) -> None:
        self.steps = self.losses = self.batches = 0


def install(torch: Any, folder: str) -> Counts:
    """The three hooks, as the probe's `install` puts them (`folder` unused: nothing is sent)."""
    counts = Counts()
    from torch.optim.optimizer import register_optimizer_step_post_hook
    from torch.utils.data import dataloader as data

    def step_hook(optimizer: Any, args: Any, kwargs: Any) -> None:
        counts.steps += 1

    backward, batch_next = torch.Tensor.backward, data._BaseDataLoaderIter.__next__

    def counted_backward(self: Any, *args: Any, **kwargs: Any) -> Any:
        counts.losses += 1
        return backward(self, *args, **kwargs)

    def counted_next(self: Any) -> Any:
        batch = batch_next(self)
        counts.batches += 1
        return batch

    register_optimizer_step_post_hook(step_hook)
    torch.Tensor.backward = counted_backward
    data._BaseDataLoaderIter.__next__ = counted_next
    return counts
