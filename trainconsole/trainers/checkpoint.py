"""Checkpoints: written atomically (temp file, fsync, rename), read back with `weights_only=True`.

A checkpoint is a dict of plain data and tensors — `model` (state_dict without `module.` prefixes),
`optimizer`, `scaler`, `epoch`, `step`, `epoch_complete`, `batches_done`, `config`, `metrics` — so any
strategy on any device can load it without unpickling code.
"""

from __future__ import annotations

import os
import pickle
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn

from .errors import CheckpointError

#: Prefixes wrappers add to parameter names: DataParallel/DDP, torch.compile.
WRAPPER_PREFIXES = ("module.", "_orig_mod.")

UNSAFE = ("{path} carries pickled code/objects that weights_only refuses; only load checkpoints you trust "
          "(re-save its state_dict with torch.save(model.state_dict(), path)). Detail: {detail}")


def strip_prefixes(state_dict: Mapping[str, Any]) -> dict[str, Any]:
    """The same state_dict with wrapper prefixes (`module.`, `_orig_mod.`) removed from every key."""
    out = {}
    for key, value in state_dict.items():
        while key.startswith(WRAPPER_PREFIXES):
            key = key.split(".", 1)[1]
        out[key] = value
    return out


def save(path: str | os.PathLike[str], model: nn.Module, optimizer: torch.optim.Optimizer | None,
         scaler: Any, epoch: int, step: int, config: dict[str, Any], metrics: dict[str, float],
         **extra: Any) -> Path:
    """Write a checkpoint atomically; `model` should be the strategy's unwrapped module."""
    state = {
        "model": strip_prefixes(model.state_dict()),
        "optimizer": optimizer.state_dict() if optimizer is not None else None,
        "scaler": scaler.state_dict() if scaler is not None else None,
        "epoch": int(epoch),
        "step": int(step),
        "config": config,
        "metrics": {k: float(v) for k, v in metrics.items()},
        **extra,
    }
    return write_atomic(path, state)


def write_atomic(path: str | os.PathLike[str], obj: Any) -> Path:
    """torch.save to a temp file in the same directory, fsync, rename over `path`, fsync the directory.

    A kill at any moment leaves either the old file or the new one, never half of one.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")  # one writer (rank 0): a fixed name never piles up
    try:
        with open(tmp, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)  # make the rename itself durable
    finally:
        os.close(dir_fd)
    return path


def load(path: str | os.PathLike[str], map_location: Any = "cpu") -> dict[str, Any]:
    """Load a checkpoint (or a raw state_dict, returned as `{"model": ...}`) with weights_only=True."""
    obj = _torch_load(path, map_location)
    if isinstance(obj, Mapping) and isinstance(obj.get("model"), Mapping):
        return {**obj, "model": strip_prefixes(obj["model"])}
    if isinstance(obj, Mapping) and isinstance(obj.get("state_dict"), Mapping):
        return {"model": strip_prefixes(obj["state_dict"])}  # Lightning-style files
    if isinstance(obj, Mapping) and obj and all(isinstance(v, torch.Tensor) for v in obj.values()):
        return {"model": strip_prefixes(obj)}
    raise CheckpointError(f"{path} is neither a checkpoint nor a state_dict (found {type(obj).__name__})")


def load_model_weights(path: str | os.PathLike[str], map_location: Any = "cpu") -> dict[str, Any]:
    """Just the model's state_dict from a checkpoint or state_dict file."""
    return load(path, map_location)["model"]


def _torch_load(path: str | os.PathLike[str], map_location: Any) -> Any:
    if not os.path.isfile(path):
        raise CheckpointError(f"{path}: no such checkpoint file")
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as e:
        detail = " ".join(str(e).split())[:200]
        raise CheckpointError(UNSAFE.format(path=path, detail=detail)) from e
    except (RuntimeError, zipfile.BadZipFile, EOFError, ValueError) as e:
        raise CheckpointError(f"{path} is not a readable PyTorch checkpoint (truncated or damaged?): "
                              f"{' '.join(str(e).split())[:200]}") from e


__all__ = ["CheckpointError", "load", "load_model_weights", "save", "strip_prefixes", "write_atomic"]
