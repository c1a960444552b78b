"""Optimizer, learning-rate schedule and mixed precision, as configured in `[train]`."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import torch
from torch import nn

TrainConfig = dict[str, Any]


def make_optimizer(model: nn.Module, train: TrainConfig) -> torch.optim.Optimizer:
    """sgd (momentum, weight_decay), adam or adamw over the trainable parameters."""
    params = [p for p in model.parameters() if p.requires_grad]
    lr, wd = train["lr"], train["weight_decay"]
    if train["optimizer"] == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=train["momentum"], weight_decay=wd)
    if train["optimizer"] == "adam":
        return torch.optim.Adam(params, lr=lr, weight_decay=wd)
    return torch.optim.AdamW(params, lr=lr, weight_decay=wd)


class LrSchedule:
    """The learning rate as a function of the global step only, so a resume needs no scheduler state.

    none: constant; cosine: from lr to 0 over `total_steps`; step: ×0.1 after each third of them.
    """

    def __init__(self, kind: str, base_lr: float, total_steps: int) -> None:
        self.kind, self.base_lr, self.total = kind, base_lr, max(1, total_steps)
        self.active = kind != "none"

    def lr_at(self, step: int) -> float:
        """The learning rate for the optimizer step after `step` steps."""
        progress = min(step, self.total) / self.total
        if self.kind == "cosine":
            return self.base_lr * 0.5 * (1.0 + math.cos(math.pi * progress))
        if self.kind == "step":
            return self.base_lr * 0.1 ** min(2, int(progress * 3))
        return self.base_lr

    def apply(self, optimizer: torch.optim.Optimizer, step: int) -> None:
        """Set the learning rate of every parameter group for the coming step."""
        lr = self.lr_at(step)
        for group in optimizer.param_groups:
            group["lr"] = lr


class Precision:
    """fp32, bf16 (autocast on CPU and CUDA) or fp16 (autocast + GradScaler, CUDA only)."""

    def __init__(self, requested: str, device: torch.device, warn: Callable[..., Any]) -> None:
        self.requested, self.device_type = requested, device.type
        self.name = requested
        if requested == "fp16" and device.type != "cuda":
            self.name = "bf16"  # CPU fp16 autocast is slow and unscaled; bf16 has fp32's range
            warn(code="fp16_on_cpu", message="fp16 needs a CUDA device; running in bf16 on the CPU",
                 hint="set train.precision = 'bf16' (or 'fp32') for CPU runs")
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(self.name)
        self.dtype = dtype
        self.scaler = torch.amp.GradScaler("cuda") if self.name == "fp16" else None

    def autocast(self) -> AbstractContextManager[Any]:
        """The context the forward pass and loss run in."""
        if self.dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device_type, dtype=self.dtype)
