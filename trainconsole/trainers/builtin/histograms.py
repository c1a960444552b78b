"""Compact weight histograms: each parameter tensor's range and counts in `BINS` bins, as an event.

Every `train.histogram_every` epochs global rank 0 emits one `histogram` event, `layers` mapping each
parameter's name (`layer.weight`, `layer.bias`, without `module.`) to `{"min", "max", "counts"}`: small
enough for the event log (~100 bytes a tensor), enough for the console to draw a layer's distribution
over epochs. Read at the epoch's end only, never in the training step.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

BINS = 16


@torch.no_grad()
def compact(model: nn.Module, bins: int = BINS) -> dict[str, dict[str, Any]]:
    """`{name: {"min", "max", "counts"}}` for every parameter of `model` (an unwrapped model)."""
    layers = {}
    for name, param in model.named_parameters():
        values = param.detach().float().flatten()
        if values.numel() == 0:
            continue
        low, high = (float(v) for v in torch.stack(values.aminmax()).tolist())
        if not (math.isfinite(low) and math.isfinite(high)):  # NaN/Inf weights: no bins, say so
            layers[name] = {"min": None, "max": None, "counts": []}
            continue
        if high > low:
            counts = [int(c) for c in torch.histc(values, bins=bins, min=low, max=high).tolist()]
        else:  # every value equal: all in the first bin
            counts = [values.numel()] + [0] * (bins - 1)
        layers[name] = {"min": float(f"{low:.6g}"), "max": float(f"{high:.6g}"), "counts": counts}
    return layers
