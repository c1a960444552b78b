"""A precision that is much slower than fp32 on this device gets a warning before training starts.

bf16 autocast on a CPU without native bf16 runs ~300 times slower than fp32; a user who picked it for
speed should know in the first seconds, with the measured ratio, not after an hour.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import Dataset

SLOW_RATIO = 3.0  # warn when the chosen precision's step takes this many times fp32's
SAMPLES = 8


#: How a probe times one precision: (model, inputs, targets, autocast context, device) -> seconds.
Timer = Callable[[nn.Module, torch.Tensor, torch.Tensor, Callable[[], Any], torch.device], float]


def check(model: nn.Module, dataset: Dataset, strategy: Any, precision: Any,
          emit: Callable[..., Any], timer: Timer | None = None) -> float | None:
    """Time forward+backward of a few samples in fp32 and in `precision` (with `timer`, `step_seconds`
    unless a test gives its own); warn if much slower. Returns the ratio (None for fp32). Gradients and
    the RNG state are left as they were."""
    timer = timer or step_seconds
    if precision.dtype is None:
        return None
    x = torch.stack([dataset[i][0] for i in range(min(SAMPLES, len(dataset)))])
    x, y = strategy.batch_to_device((x, torch.zeros(x.shape[0], dtype=torch.long)))
    model, device = getattr(model, "module", model) if strategy.name == "ddp" else model, strategy.device
    rng, was_training = torch.get_rng_state(), model.training
    model.eval()  # batch-norm running statistics must not learn from the probe
    try:
        fp32 = timer(model, x, y, contextlib.nullcontext, device)
        chosen = timer(model, x, y, precision.autocast, device)
    finally:
        torch.set_rng_state(rng)
        model.zero_grad(set_to_none=True)
        model.train(was_training)
    ratio = chosen / max(fp32, 1e-9)
    if ratio >= SLOW_RATIO:
        emit("warning", code="slow_precision", ratio=round(ratio, 1),
             message=f"train.precision = {precision.name!r} runs {ratio:.0f}x slower than fp32 on {device} "
             f"(forward+backward of {x.shape[0]} samples: {chosen * 1000:.0f} ms vs {fp32 * 1000:.1f} ms)",
             hint="set train.precision = 'fp32' here; bf16 pays off on GPUs and on CPUs with native bf16")
    return ratio


def step_seconds(model: nn.Module, x: torch.Tensor, y: torch.Tensor, context: Callable[[], Any],
                 device: torch.device) -> float:
    """The faster of two timed forward+backward passes, after one warm-up."""
    best = float("inf")
    for i in range(3):
        start = time.perf_counter()
        with context():
            loss = F.cross_entropy(model(x).float(), y)
        loss.backward()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        if i:
            best = min(best, time.perf_counter() - start)
    return best
