"""The probe's small parts, in this process (real torch): how it names each optimizer's loss, which param
group's lr is the headline, the samples of an epoch's last batch, and `train(mode=False)` by name."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

PROBE = Path(__file__).parents[2] / "trainconsole/trainers/scripts/inject/_trainconsole_probe.py"


@pytest.fixture(scope="module")
def probe() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_probe_parts", PROBE)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def stepper(probe: ModuleType, names: list[str], var: str) -> Any:
    optimizer = torch.optim.SGD(torch.nn.Linear(2, 1).parameters(), lr=0.1)
    opt = probe.Stepper(optimizer, names)
    opt.var = var
    return opt


@pytest.mark.parametrize(("names", "var", "label"), [
    (["loss_D"], "opt", "loss_D"),  # the loss variable, where it says loss
    (["errD_real", "errD_fake"], "optimizerD", "loss_D"),  # else the optimizer's name less `optimizer`
    (["errG"], "g_optim", "loss_g"),
    (["errG"], "", "loss_errG"),  # else the loss variable's
    ([""], "", "loss_2"),  # else its place among the optimizers
])
def test_each_optimizers_loss_is_named_as_the_script_names_it(probe: ModuleType, names: list[str], var: str,
                                                             label: str) -> None:
    first, opt = stepper(probe, ["loss_other"], "a"), stepper(probe, names, var)
    assert probe._labels([first, opt], [opt]) == [label]


def test_two_alike_are_told_apart(probe: ModuleType) -> None:
    a, b = stepper(probe, ["loss"], ""), stepper(probe, ["loss"], "")
    assert probe._labels([a, b], [a, b]) == ["loss", "loss_2"]


def test_the_headline_lr_is_the_largest_groups(probe: ModuleType) -> None:
    model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.Linear(32, 1))
    groups = [{"params": [model[1].bias], "lr": 0.1}, {"params": list(model[0].parameters()), "lr": 0.01},
              {"params": [model[1].weight], "lr": 0.05}]
    opt = probe.Stepper(torch.optim.SGD(groups, lr=1.0), [])
    assert opt.largest == 1 and opt.lr() == 0.01
    opt.optimizer.add_param_group({"params": [torch.nn.Parameter(torch.zeros(1000))], "lr": 0.5})
    assert opt.lr() == 0.5  # a group added since counts


def test_an_epochs_last_batch_is_as_it_is(probe: ModuleType) -> None:
    data = TensorDataset(torch.zeros(100, 1))
    assert probe._last_batch(DataLoader(data, batch_size=16)) == 4
    assert probe._last_batch(DataLoader(data, batch_size=16, drop_last=True)) == 0
    assert probe._last_batch(DataLoader(data, batch_size=20)) == 0


def test_train_mode_false_by_name_is_evaluating(probe: ModuleType, tmp_path: Path) -> None:
    p = probe.Probe(torch, str(tmp_path))
    p.state.step = 7
    p.on_mode(torch.nn.Linear(1, 1), mode=False)
    assert p.state.eval_at == 7


def test_a_line_after_another_loaders_pass_says_so(probe: ModuleType, tmp_path: Path) -> None:
    p = probe.Probe(torch, str(tmp_path))
    train, test = (DataLoader(TensorDataset(torch.zeros(8, 1)), batch_size=4) for _ in range(2))
    p.on_loader(train)
    p.on_step(torch.optim.SGD(torch.nn.Linear(1, 1).parameters(), lr=0.1))  # a step in the training loader
    p.on_text("o", "epoch 1 loss 0.5\n")
    p.on_loader(test)  # the test loop, under no_grad or not (super_resolution's PSNR)
    p.on_text("o", "PSNR 21.3\n")
    lines = [json.loads(x) for x in (tmp_path / f"{os.getpid()}.jsonl").read_text().splitlines()]
    assert [(x["h"], x.get("ev", False)) for x in lines if x["k"] == "line"] == [("epoch 1 loss 0.5", False),
                                                                                 ("PSNR 21.3", True)]
