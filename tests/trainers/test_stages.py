"""Model-parallel building blocks, in-process: layer sequences, balanced cuts, the pipeline, rank shards."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.utils.data import DistributedSampler, TensorDataset
from trainer_runs import ON_CPU, make_config, make_run

from trainconsole.protocol import EventWriter, read_all
from trainconsole.trainers.builtin import loop, models
from trainconsole.trainers.errors import StrategyUnavailable
from trainconsole.trainers.lifecycle.signals import StopFlag
from trainconsole.trainers.strategies import rendezvous, stages
from trainconsole.trainers.strategies.pipeline import Pipeline
from trainconsole.trainers.strategies.rendezvous import rank_envs
from trainconsole.trainers.strategies.samplers import RankSampler

CPU = torch.device("cpu")


def test_balanced_split_minimises_the_heaviest_stage() -> None:
    assert stages.balanced_split([1, 1, 1, 1, 10], 3) == [2, 4]
    assert stages.balanced_split([5, 1, 1, 1, 1, 1], 2) == [1]
    assert stages.balanced_split([3, 3, 3, 3], 4) == [1, 2, 3]
    with pytest.raises(StrategyUnavailable):
        stages.balanced_split([1, 2], 3)


def test_split_points_are_checked() -> None:
    assert stages.check_split_points([3, 7], 10) == [3, 7]
    for bad in ([0], [10], [5, 5], [7, 3], [True]):
        with pytest.raises(StrategyUnavailable, match="split_points"):
            stages.check_split_points(bad, 10)


# densenet: F.relu + F.adaptive_avg_pool2d steps; shufflenet: x.mean([2, 3]); squeezenet: flatten last
@pytest.mark.parametrize("name", ["small_cnn", "resnet18", "vgg11", "densenet121", "shufflenet_v2_x0_5",
                                  "squeezenet1_1"])
def test_pipeline_computes_what_the_model_computes(name: str) -> None:
    torch.manual_seed(0)
    make = (lambda: models.small_cnn((3, 32, 32), 10)) if name == "small_cnn" else (
        lambda: models.torchvision_model(name, 10))
    model, reference = make(), make()
    reference.load_state_dict(model.state_dict())
    layers = stages.layers_of(model)
    points = stages.balanced_split([stages.param_count(layer) for layer in layers], 3)
    pipeline = Pipeline(model, stages.cut(layers, points), [CPU] * 3, micro_batches=3).eval()
    x = torch.randn(7, 3, 32, 32)  # 7 rows in micro-batches of 3, 3 and 1
    with torch.no_grad():
        assert torch.allclose(pipeline(x), reference.eval()(x), atol=1e-5)
    assert sum(pipeline.stage_sizes()) == sum(p.numel() for p in reference.parameters())
    assert list(model.state_dict()) == list(reference.state_dict())  # the original keys, untouched
    assert [id(p) for p in pipeline.parameters()] == [id(p) for p in model.parameters()]


def test_models_without_a_sequence_are_refused() -> None:
    with pytest.raises(StrategyUnavailable, match="cannot split"):
        stages.layers_of(torch.nn.Bilinear(2, 2, 2))


def test_rank_shards_are_distributed_sampler_shards() -> None:
    data = TensorDataset(torch.arange(23))
    for rank in range(3):
        mine = RankSampler(data, 3, rank, shuffle=True, seed=5)
        theirs = DistributedSampler(data, num_replicas=3, rank=rank, shuffle=True, seed=5)
        mine.set_epoch(2)
        theirs.set_epoch(2)
        assert list(mine) == list(theirs) and len(mine) == len(theirs) == 8
    val = [list(RankSampler(data, 3, r, shuffle=False, pad=False)) for r in range(3)]
    assert sorted(i for shard in val for i in shard) == list(range(23))  # eval: every sample exactly once


def test_rank_environments() -> None:
    spec = {"master_addr": "127.0.0.1", "master_port": 0, "nnodes": 1, "node_rank": 0}
    envs = rank_envs(spec, 2)
    assert [e["RANK"] for e in envs] == ["0", "1"] and envs[0]["MASTER_PORT"] == envs[1]["MASTER_PORT"] != "0"
    node1 = rank_envs({**spec, "master_port": 29999, "nnodes": 2, "node_rank": 1}, 2)
    assert [(e["RANK"], e["LOCAL_RANK"], e["WORLD_SIZE"]) for e in node1] == [("2", "0", "4"),
                                                                             ("3", "1", "4")]
    with pytest.raises(StrategyUnavailable, match="master_port"):
        rank_envs({**spec, "nnodes": 2}, 1)


def test_a_rendezvous_port_is_free_and_never_one_the_os_hands_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rank 0 binds its port seconds after it was picked: a port the OS picked (bind to 0) and released
    may be handed to the next process that asks in between, and two DDP runs started together failed with
    EADDRINUSE. The port is picked below the OS's own range, and a taken one is passed over."""
    low = rendezvous._ephemeral_low()
    ports = {rendezvous.free_port("127.0.0.1") for _ in range(20)}
    assert all(rendezvous.PORTS_FROM <= p < low for p in ports) and len(ports) > 1
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        picks = iter([taken.getsockname()[1], min(ports)])
        monkeypatch.setattr(rendezvous.random, "randrange", lambda a, b: next(picks))
        assert rendezvous.free_port("127.0.0.1") == min(ports)


def test_the_not_a_chain_table_matches_installed_torchvision(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every torchvision classifier traced (on the meta device: no memory, no compute): the ones that do
    not chain are exactly protocol's NOT_A_CHAIN, so validation refuses before start what cannot split."""
    from torchvision.models import regnet

    from trainconsole.protocol.model_names import NOT_A_CHAIN, TORCHVISION_CLASSIFIERS

    widths = regnet.BlockParams.from_init_params  # computes block widths with tensor ops: not on meta
    monkeypatch.setattr(regnet.BlockParams, "from_init_params",
                        classmethod(lambda cls, *a, **k: on_cpu(widths, *a, **k)))
    refused = set()
    for name in sorted(TORCHVISION_CLASSIFIERS):
        with torch.device("meta"):
            model = models.torchvision_model(name, 10)
        try:
            assert len(stages.layers_of(model)) >= 2, name
        except StrategyUnavailable:
            refused.add(name)
    assert refused == set(NOT_A_CHAIN)


def on_cpu(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    with torch.device("cpu"):
        return fn(*args, **kwargs)


def test_branching_models_are_refused_with_the_reason() -> None:
    class Skip(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.b(self.a(x)) + x

    with pytest.raises(StrategyUnavailable, match=r"cannot split Skip: .*used more than once"):
        stages.layers_of(Skip())


# model_parallel trains each family (the smallest of each) in two non-empty stages on tiny images.
FAMILIES = ["mobilenet_v3_small", "efficientnet_b0", "densenet121", "convnext_tiny", "regnet_x_400mf",
            "squeezenet1_1", "mobilenet_v2", "shufflenet_v2_x0_5", "mnasnet0_5"]


@pytest.mark.slow
@pytest.mark.parametrize("name", FAMILIES)
def test_torchvision_families_train_in_two_stages(tmp_path: Path, name: str) -> None:
    batch = 8 if name.startswith("regnet") else 4  # RegNet's BatchNorm on 1x1 maps of 2 samples blows up
    data = {"name": "synthetic", "samples": 4 * batch, "shape": [3, 32, 32]}
    config = make_config(model={"name": name}, data=data,
                         train={"epochs": 1, "max_steps": 2, "batch_size": batch, "threads": 2, "lr": 0.001},
                         strategy={"name": "model_parallel", "devices": 2, "micro_batches": 2, **ON_CPU})
    (tmp_path / "runs").mkdir()
    run = make_run(tmp_path, config, name=name)
    outcome = loop.run(config, run, EventWriter(run.events, run.id), StopFlag())
    assert outcome.status == "finished"
    started = [e for e in read_all(run.events) if e["type"] == "started"][0]
    assert len(started["stage_params"]) == 2 and min(started["stage_params"]) > 0
    assert sum(started["stage_params"]) == started["params"]


def test_a_plugin_that_does_not_chain_fails_with_a_hint_that_applies() -> None:
    from trainconsole.trainers.troubles.explain import explain

    with pytest.raises(StrategyUnavailable) as caught:
        stages.layers_of(torch.nn.Bilinear(2, 2, 2))
    hint = explain(caught.value, {}).hint
    assert "nn.Sequential" in hint and "accelerator" not in hint
