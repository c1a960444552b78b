"""Model-parallel: the model cut into stages on consecutive devices, micro-batches pipelined through them.

Stages are balanced by parameter count, or cut at `strategy.split_points` (indices into the layer
sequence of trainconsole/trainers/strategies/stages.py). Without GPUs every stage sits on the CPU: the split
and the
pipeline still run, and a `warning` event says there is no speed-up to expect.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ..errors import StrategyUnavailable
from . import stages as staging
from .base import Config, Strategy
from .devices import resolve
from .pipeline import Pipeline

ON_CPU = {"code": "model_parallel_on_cpu",
          "hint": "model_parallel only pays off with a model too big for one GPU and 2+ GPUs to hold it"}


class ModelParallel(Strategy):
    """One process; stage i on device i; inputs enter on the first device, the loss is on the last."""

    name = "model_parallel"

    def __init__(self, config: Config) -> None:
        spec = config["strategy"]
        found = resolve(config)
        count = len(spec["split_points"]) + 1 if spec["split_points"] else len(found)
        if found[0].type == "cuda" and count > len(found):
            raise StrategyUnavailable(f"strategy.split_points makes {count} stages but strategy.devices "
                                      f"gives {len(found)} GPU(s)")
        self.stage_devices = found[:count] if found[0].type == "cuda" else [torch.device("cpu")] * count
        super().__init__(config, self.stage_devices[-1])  # the output, hence the loss, lives here
        self.points: list[int] = []
        self.stage_params: list[int] = []
        if self.device.type == "cuda":
            torch.cuda.set_device(self.stage_devices[0])
        else:
            self.warnings.append({**ON_CPU, "message": f"no GPU: all {count} pipeline stages sit on the cpu "
                                  "(the split and the micro-batch pipeline run, without any speed-up)"})

    @property
    def devices(self) -> list[torch.device]:
        """One entry per stage, in pipeline order."""
        return list(self.stage_devices)

    @property
    def input_device(self) -> torch.device:
        """Inputs enter on the first stage's device."""
        return self.stage_devices[0]

    def setup_module(self, model: nn.Module) -> nn.Module:
        """Cut the model into stages (balanced by parameters, or at split_points) and place them."""
        layers = staging.layers_of(model)
        given = self.config["strategy"]["split_points"]
        if given:
            self.points = staging.check_split_points(given, len(layers))
        else:
            weights = [staging.param_count(layer) for layer in layers]
            self.points = staging.balanced_split(weights, len(self.stage_devices))
        pipeline = Pipeline(model, staging.cut(layers, self.points), self.stage_devices,
                            self.config["strategy"]["micro_batches"])
        self.stage_params = pipeline.stage_sizes()
        return pipeline

    def unwrap(self, model: nn.Module) -> nn.Module:
        """The original, unsplit module (its state_dict has the usual keys)."""
        return model.module if isinstance(model, Pipeline) else model

    def batch_to_device(self, batch: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """Inputs to the first stage's device, targets to the last one's (where the loss is computed)."""
        x, y = batch
        nb = self.device.type == "cuda"
        return x.to(self.input_device, non_blocking=nb), y.to(self.device, non_blocking=nb)

    def started_fields(self) -> dict[str, Any]:
        """The stage layout, for the `started` event."""
        return {"split_points": self.points, "stage_params": self.stage_params,
                "micro_batches": self.config["strategy"]["micro_batches"]}
