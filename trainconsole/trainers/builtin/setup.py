"""Everything a training process builds before its first step: seeds, data, model, optimizer, precision."""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from trainconsole.protocol import Config

from ..strategies import Strategy
from . import data, models
from .batches import Batches, make_batches
from .optim import Precision, make_optimizer


@dataclass
class Parts:
    """What the loop trains with; `model` is already placed (and wrapped) by the strategy."""

    split: data.DataSplit
    train_batches: Batches
    val_batches: Batches
    model: nn.Module
    optimizer: torch.optim.Optimizer
    precision: Precision
    params: int
    trainable: int


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch (CPU and every CUDA device)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def build(strategy: Strategy, config: Config, warn: Callable[..., Any]) -> Parts:
    """Seed, set threads, build the data, model, optimizer and precision for this process."""
    train = config["train"]
    if train["threads"]:
        torch.set_num_threads(train["threads"])
    seed_everything(train["seed"])
    split = data.build(config)
    batch = strategy.local_batch_size(train["batch_size"])
    workers = strategy.local_num_workers(config["data"]["num_workers"])
    cap = train["max_memory_mb"] or 0
    train_batches = make_batches(split.train, batch, True, strategy, workers, train["seed"], cap)
    val_batches = make_batches(split.val, batch, False, strategy, workers, train["seed"], cap)
    warn_large_batch(train["batch_size"], len(split.train), len(train_batches), warn)
    model = models.build(config, split.num_classes, split.input_shape)
    if models.has_lazy(model):
        model = models.materialise(model, first_input(split).to(strategy.input_device))
    params, trainable = models.count_params(model)
    model = strategy.setup_module(model)
    return Parts(split, train_batches, val_batches, model, make_optimizer(model, train),
                 Precision(train["precision"], strategy.device, warn), params, trainable)


def warn_large_batch(batch_size: int, samples: int, per_epoch: int, warn: Callable[..., Any]) -> None:
    """One `warning` when a batch is larger than the whole training set: every step sees all of it."""
    if batch_size > samples:
        warn(code="batch_larger_than_data",
             message=f"train.batch_size = {batch_size} is larger than the training set ({samples} samples): "
                     f"{per_epoch} batch(es) per epoch, each the whole set",
             hint=f"lower train.batch_size below {samples} for more than one step per epoch")


def first_input(split: data.DataSplit) -> torch.Tensor:
    """One training input (no batch dimension): what lazy layers take their shapes from."""
    sample = split.train[0]
    return torch.as_tensor(sample[0] if isinstance(sample, (tuple, list)) else sample)


def started_fields(strategy: Strategy, config: Config, parts: Parts) -> dict[str, Any]:
    """The `started` event's fields (the loop adds the resume position)."""
    split = parts.split
    return {
        "strategy": strategy.name, "world_size": strategy.world_size,
        "devices": [str(d) for d in strategy.devices], "params": parts.params,
        "trainable_params": parts.trainable, "frozen_params": parts.params - parts.trainable,
        "pid": os.getpid(), "precision": parts.precision.name, "num_classes": split.num_classes,
        "input_shape": list(split.input_shape), "train_samples": len(split.train),
        "val_samples": len(split.val), "steps_per_epoch": len(parts.train_batches),
        "batch_size": config["train"]["batch_size"], "epochs": config["train"]["epochs"],
        "config": summary(config), **strategy.started_fields(),
    }


def summary(config: Config) -> dict[str, Any]:
    """The few config values a run list shows."""
    m, d, t = config["model"], config["data"], config["train"]
    return {"model": m["name"], "data": d["name"], "epochs": t["epochs"], "batch_size": t["batch_size"],
            "lr": t["lr"], "optimizer": t["optimizer"], "lr_schedule": t["lr_schedule"],
            "precision": t["precision"], "strategy": config["strategy"]["name"]}
