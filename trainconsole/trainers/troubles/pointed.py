"""Pointed explanations of failures inside a training step, found by looking at the model and batch.

A shape mismatch is replayed on one sample with hooks on every layer, so the `failed` event names the
layer that failed and the shapes that led to it; a label outside [0, num_classes) is named with
`model.num_classes`. Anything else is left to the rule table, troubles/explain.py.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ..errors import TrainerError
from .explain import LABEL_MARKERS, SHAPE_MARKERS, hint_for, one_line

SHOWN_LAYERS = 4  # layers before the failing one that the hint lists


class Pointed(TrainerError):
    """A failure explained with the model and batch at hand; `hint` says what to change."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.hint = hint


def pointed(exc: BaseException, model: nn.Module, x: torch.Tensor, y: torch.Tensor,
            num_classes: int, config: dict[str, dict[str, Any]]) -> Pointed | None:
    """A better-explained error for `exc` raised by a step on (x, y), or None to keep `exc` as it is."""
    text = str(exc)
    if isinstance(exc, TrainerError):
        return None
    if any(m in text for m in LABEL_MARKERS) or isinstance(exc, IndexError):
        return _labels(y, num_classes, config["model"]["num_classes"])
    if any(m in text for m in SHAPE_MARKERS):
        return _shapes(exc, model, x, hint_for(exc, config))
    return None


def _labels(y: torch.Tensor, num_classes: int, configured: int) -> Pointed | None:
    try:
        labels = y.detach().cpu()
    except RuntimeError:  # a CUDA device-side assert poisons the context: nothing more can be read
        return None
    bad = labels[(labels < 0) | (labels >= num_classes)]
    if bad.numel() == 0:
        return None
    worst = int(bad.max()) if int(bad.max()) >= num_classes else int(bad.min())
    source = f"model.num_classes = {configured}" if configured else f"{num_classes} taken from the dataset"
    return Pointed(f"label {worst} is outside [0, {num_classes}) ({source}; {bad.numel()} such labels "
                   "in this batch)", f"set model.num_classes to at least {int(labels.max()) + 1}, or make "
                   "the dataset's labels 0 .. num_classes - 1")


def _shapes(exc: BaseException, model: nn.Module, x: torch.Tensor, advice: str) -> Pointed | None:
    """Replay one sample through the model with hooks; name the layer that fails and the shapes."""
    trace = layer_trace(model, x[:1])
    if not trace or trace[-1]["out"] is not None:
        return None  # one sample went through: the mismatch is elsewhere (loss, batch-dependent code)
    failing = trace[-1]
    before = "; ".join(f"{t['name']} {t['in']} -> {t['out']}" for t in trace[-1 - SHOWN_LAYERS:-1])
    cause = (f"shape mismatch in layer {failing['name']} ({failing['module']}): input {failing['in']}: "
             f"{one_line(exc, 160)}")
    return Pointed(cause, f"{sample_words(list(x.shape[1:]), trace[0])}; layers before it (one sample): "
                          f"{before or 'none'}; {advice}")


def sample_words(sample: list[int], first: dict[str, Any]) -> str:
    """The data's sample shape, what the model's first layer takes, and a channels-last guess."""
    words = f"the data's samples have shape {sample}"
    takes = first.get("takes")
    if not takes:
        return words
    words += f", the model's first layer ({first['module']}) takes {takes[0]}"
    channels = takes[1]
    if channels and len(sample) == 3 and sample[-1] == channels and sample[0] != channels:
        words += (f": these look channels-last, make the dataset return [C, H, W] "
                  f"(x.permute(2, 0, 1): {[sample[2], sample[0], sample[1]]})")
    return words


def takes(module: nn.Module) -> tuple[str, int | None] | None:
    """What one sample must look like for this layer, in words, and the channel count it wants."""
    if isinstance(module, nn.Conv1d | nn.Conv2d | nn.Conv3d):
        dims = {nn.Conv1d: "L", nn.Conv2d: "H, W", nn.Conv3d: "D, H, W"}[type(module)]
        return f"[{module.in_channels}, {dims}] (channels first)", module.in_channels
    if isinstance(module, nn.Linear):
        return f"[..., {module.in_features}] ({module.in_features} features last)", None
    if isinstance(module, nn.BatchNorm2d):
        return f"[{module.num_features}, H, W]", module.num_features
    if isinstance(module, nn.BatchNorm1d):
        return f"[{module.num_features}] or [{module.num_features}, L]", None
    if isinstance(module, nn.Embedding):
        return f"integer indices below {module.num_embeddings}", None
    return None


def layer_trace(model: nn.Module, sample: torch.Tensor) -> list[dict[str, Any]]:
    """[{name, module, in, out}] for every leaf layer entered on `sample`; `out` None where it failed."""
    trace: list[dict[str, Any]] = []
    handles = []
    for name, module in model.named_modules():
        if next(module.children(), None) is not None:
            continue
        handles.append(module.register_forward_pre_hook(_enter(trace, name or type(module).__name__)))
        handles.append(module.register_forward_hook(_leave(trace)))
    try:
        with torch.no_grad():
            model(sample)
    except Exception:  # noqa: BLE001, S110 - the failure is what the trace is for
        pass
    finally:
        for handle in handles:
            handle.remove()
    return trace


def _enter(trace: list[dict[str, Any]], name: str) -> Any:
    def hook(module: nn.Module, args: tuple) -> None:
        shape = list(args[0].shape) if args and isinstance(args[0], torch.Tensor) else None
        trace.append({"name": name, "module": _short(module), "in": shape, "out": None,
                      "takes": takes(module)})
    return hook


def _leave(trace: list[dict[str, Any]]) -> Any:
    def hook(module: nn.Module, args: tuple, out: Any) -> None:
        if trace and isinstance(out, torch.Tensor):
            trace[-1]["out"] = list(out.shape)
    return hook


def _short(module: nn.Module) -> str:
    text = repr(module)
    return text if len(text) <= 80 else text[:79] + "…"
