"""A plug-in model with lazy layers (nn.LazyLinear) trains: its parameters exist before they are counted,
wrapped by DDP or split into stages."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch
from trainer_runs import ON_CPU, events, make_config, make_run, train

from trainconsole.trainers.builtin import models

PLUGIN = textwrap.dedent('''
    from torch import nn

    def lazy_mlp(config, num_classes, input_shape):
        # The user never says how wide the input is: LazyLinear finds out at the first forward.
        return nn.Sequential(nn.Flatten(), nn.LazyLinear(32), nn.ReLU(), nn.LazyLinear(num_classes))
''')
# digits: 1x8x8 inputs, 10 classes -> 64*32 + 32 + 32*10 + 10
LAZY_PARAMS = 64 * 32 + 32 + 32 * 10 + 10


def test_materialise_gives_lazy_layers_their_shapes() -> None:
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.LazyLinear(3), torch.nn.BatchNorm1d(3))
    assert models.has_lazy(model)
    model = models.materialise(model, torch.randn(2, 4))
    assert not models.has_lazy(model) and model.training  # training mode is kept
    assert model[1].weight.shape == (3, 8) and model[2].num_batches_tracked == 0  # eval: stats untouched


@pytest.mark.parametrize("strategy", [{"name": "single"}, {"name": "ddp", "devices": 2, **ON_CPU},
                                      {"name": "model_parallel", "devices": 2, **ON_CPU}],
                         ids=["single", "ddp", "model_parallel"])
def test_a_lazy_plugin_trains(tc_home: Path, tmp_path: Path, strategy: dict) -> None:
    (tmp_path / "tc_lazy_plugin.py").write_text(PLUGIN)
    config = make_config(model={"name": "tc_lazy_plugin:lazy_mlp"}, strategy=strategy,
                         train={"epochs": 1, "max_steps": 3, "batch_size": 16})
    run = make_run(tc_home, config)
    assert train(run, pythonpath=str(tmp_path)) == 0, run.stderr.read_text()
    started = events(run, "started")[0]
    assert started["params"] == started["trainable_params"] == LAZY_PARAMS
    assert events(run, "finished") and events(run, "step")[-1]["step"] == 3
