"""Helpers the strategy tests run inside training processes (importable by spawned ranks and plug-ins).

- `first_step_grads`: the gradients of the first optimizer step, built by the loop's own Training.
- `restored_evals`: (val_loss, val_acc, step) of checkpoints restored under a strategy.
- `lazy_digits`: the digits dataset behind a plain Dataset, so the loop uses a DataLoader with workers.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch.utils.data import Dataset

from trainconsole.protocol import Config
from trainconsole.trainers.builtin import data
from trainconsole.trainers.builtin.loop import Training
from trainconsole.trainers.lifecycle.signals import StopFlag
from trainconsole.trainers.strategies import Strategy


class Silent:
    """An event sink that drops everything."""

    def emit(self, kind: str, **fields: Any) -> None:
        """Ignore the event."""


def first_step_grads(strategy: Strategy, config: Config) -> dict[str, torch.Tensor]:
    """Gradients (averaged over ranks, for ddp) after one backward pass on the first batch of epoch 1."""
    training = Training(strategy, config, None, Silent(), StopFlag())
    x, y = next(iter(training.parts.train_batches.epoch(1)))
    x, y = strategy.batch_to_device((x, y))
    F.cross_entropy(training.model(x), y).backward()
    params = strategy.unwrap(training.model).named_parameters()
    return {name: p.grad.detach().cpu().clone() for name, p in params}


def restored_evals(strategy: Strategy, config: Config, paths: list[Any]) -> list[tuple[float, float, int]]:
    """(val_loss, val_acc, step) of each checkpoint, restored (as on resume) by the loop under `strategy`."""
    results = []
    for path in paths:
        training = Training(strategy, config, None, Silent(), StopFlag())
        step = training.restore(str(path))
        results.append((*training.evaluate(), step))
    return results


class LazyDigits(Dataset):
    """Digits served one sample at a time (not a TensorDataset: the loop falls back to a DataLoader)."""

    num_classes = 10

    def __init__(self, x: torch.Tensor, y: torch.Tensor) -> None:
        self.x, self.y = x, y

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.x[i], self.y[i]


def lazy_digits(config: Config) -> Dataset:
    """The `data.name = "strategy_probes:lazy_digits"` plug-in."""
    x, y, _ = data._digits()
    return LazyDigits(x, y)
