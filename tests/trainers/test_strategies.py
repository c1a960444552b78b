"""The four strategies train the same thing: DDP(2) on CPU, DataParallel's fallback, model-parallel stages.

DDP runs are real `python -m trainconsole.trainers` processes (or real spawned ranks, for the in-process
probes);
dp and model_parallel run the loop in this process. Checkpoints move between all of them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import strategy_probes as probes
import torch
from trainer_runs import GPUS, ON_CPU, events, make_config, make_run, train

from trainconsole import protocol
from trainconsole.protocol import EventWriter, RunDir, read_all
from trainconsole.trainers import checkpoint
from trainconsole.trainers.builtin import loop, models
from trainconsole.trainers.lifecycle.signals import StopFlag
from trainconsole.trainers.strategies import make_strategy

DDP2 = {"name": "ddp", "devices": 2, **ON_CPU}


@pytest.fixture(scope="module")
def ddp_run(tmp_path_factory: pytest.TempPathFactory) -> RunDir:
    """The digits demo (defaults: 5 epochs, global batch 64) trained by DDP with 2 gloo workers."""
    root = tmp_path_factory.mktemp("ddp-home")
    (root / "runs").mkdir()
    run = make_run(root, make_config(strategy=DDP2), name="ddp")
    assert train(run, timeout=120) == 0, run.stderr.read_text()
    return run


@pytest.fixture(scope="module")
def mp_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunDir, list[dict[str, Any]]]:
    """The digits demo trained model-parallel in this process: 3 stages cut at layers 2 and 7, on CPU."""
    config = make_config(strategy={"name": "model_parallel", "split_points": [2, 7], "micro_batches": 4,
                                   **ON_CPU})
    return in_process(tmp_path_factory.mktemp("mp-home"), config, "model-parallel")


@pytest.fixture(scope="module")
def dp_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunDir, list[dict[str, Any]]]:
    """One epoch of the digits demo under dp in this process (no GPU here: the single-device fallback)."""
    config = make_config(strategy={"name": "dp"}, train={"epochs": 1})
    return in_process(tmp_path_factory.mktemp("dp-home"), config, "dp")


def in_process(root: Path, config: dict[str, Any], name: str) -> tuple[RunDir, list[dict[str, Any]]]:
    """Run the loop in this process (single-process strategies) and return the run and its events."""
    (root / "runs").mkdir(parents=True, exist_ok=True)
    run = make_run(root, config, name=name)
    outcome = loop.run(config, run, EventWriter(run.events, run.id), StopFlag())
    assert outcome.status == "finished"
    return run, read_all(run.events)


@pytest.mark.slow
def test_ddp_trains_digits_as_well_as_single(ddp_run: RunDir) -> None:
    started, finished = events(ddp_run, "started")[0], events(ddp_run, "finished")[0]
    assert started["strategy"] == "ddp" and started["world_size"] == 2 and started["backend"] == "gloo"
    assert started["devices"] == ["cpu", "cpu"] and started["local_batch_size"] == 32
    assert finished["best_val_acc"] >= 0.90
    assert finished["steps"] == 5 * started["steps_per_epoch"] == 5 * 23  # the same steps as single
    steps = events(ddp_run, "step")
    assert sum(e["count"] for e in steps) == finished["steps"]
    ranks = steps[-1]["mem"]["ranks"]  # every rank's memory, gathered at event time
    assert [r["rank"] for r in ranks] == [0, 1] and all(r["rss"] > 100 << 20 for r in ranks)
    state = torch.load(ddp_run.best_ckpt, map_location="cpu", weights_only=True)
    assert not any(k.startswith("module.") for k in state["model"])
    assert protocol.run_status(ddp_run) == "finished"


@pytest.mark.slow
def test_ddp_first_step_gradients_equal_single() -> None:
    config = make_config(strategy=DDP2, train={"batch_size": 64, "seed": 3})
    ddp_grads = make_strategy(config).launch(probes.first_step_grads, config)
    config["strategy"] = {**config["strategy"], "name": "single"}
    single_grads = probes.first_step_grads(make_strategy(config), config)
    assert ddp_grads.keys() == single_grads.keys() and len(single_grads) == 8
    for name, grad in single_grads.items():
        assert grad.abs().max() > 0
        torch.testing.assert_close(ddp_grads[name], grad, rtol=1e-5, atol=1e-7, msg=name)


@pytest.mark.skipif(GPUS >= 2, reason="DataParallel has two GPUs to split over here")
def test_dp_without_two_gpus_runs_single_and_says_so(dp_run: tuple[RunDir, list[dict[str, Any]]]) -> None:
    logged = dp_run[1]
    started = next(e for e in logged if e["type"] == "started")
    warning = next(e for e in logged if e["type"] == "warning")
    assert started["strategy"] == "dp" and started["world_size"] == 1
    assert started["devices"] == (["cuda:0"] if GPUS else ["cpu"])
    assert warning["code"] == "dp_needs_two_gpus" and "single-device" in warning["message"]
    assert "ddp" in warning["hint"] and logged[-1]["type"] == "finished"


@pytest.mark.slow
def test_model_parallel_trains_digits_in_stages(mp_run: tuple[RunDir, list[dict[str, Any]]]) -> None:
    run, logged = mp_run
    started = next(e for e in logged if e["type"] == "started")
    assert started["strategy"] == "model_parallel" and started["devices"] == ["cpu"] * 3
    assert started["split_points"] == [2, 7] and sum(started["stage_params"]) == started["params"]
    warning = next(e for e in logged if e["type"] == "warning")
    assert warning["code"] == "model_parallel_on_cpu" and "3 pipeline stages" in warning["message"]
    assert logged[-1]["type"] == "finished" and logged[-1]["best_val_acc"] >= 0.90


@pytest.mark.slow
def test_checkpoints_cross_strategies(ddp_run: RunDir, mp_run: tuple[RunDir, list[dict[str, Any]]],
                                      dp_run: tuple[RunDir, list[dict[str, Any]]], tmp_path: Path) -> None:
    ddp_ckpt, mp_ckpt, dp_ckpt = ddp_run.best_ckpt, mp_run[0].last_ckpt, dp_run[0].last_ckpt
    expected = {path: checkpoint.load(path)["metrics"]["val_acc"] for path in (ddp_ckpt, mp_ckpt, dp_ckpt)}
    raw = tmp_path / "raw_state_dict.pt"  # what torch.save(DataParallel(model).state_dict()) writes
    model = torch.nn.DataParallel(models.small_cnn((1, 8, 8), 10))
    model.module.load_state_dict(checkpoint.load(ddp_ckpt)["model"])
    torch.save(model.state_dict(), raw)
    assert next(iter(torch.load(raw, weights_only=True))).startswith("module.")
    expected[raw] = expected[ddp_ckpt]

    paths = [ddp_ckpt, raw, mp_ckpt, dp_ckpt]
    for name in ("single", "model_parallel", "dp"):  # restored exactly as a resume restores them
        config = make_config(strategy={"name": name})
        results = probes.restored_evals(make_strategy(config), config, paths)
        assert [acc for _, acc, _ in results] == pytest.approx([expected[p] for p in paths]), name
    config = make_config(strategy=DDP2)  # model_parallel, dp and a raw state_dict -> ddp
    results = make_strategy(config).launch(probes.restored_evals, config, paths[1:])
    assert [acc for _, acc, _ in results] == pytest.approx([expected[p] for p in paths[1:]])
    assert [step for _, _, step in results] == [0, checkpoint.load(mp_ckpt)["step"], 23]


@pytest.mark.slow
def test_single_resumes_a_ddp_run(ddp_run: RunDir, home: Path) -> None:
    ddp_state = checkpoint.load(ddp_run.last_ckpt)
    config = make_config(train={"epochs": 6, "resume_from": str(ddp_run.last_ckpt)})
    (home / "runs").mkdir(parents=True, exist_ok=True)
    run = make_run(home, config, name="resumed")
    loop.run(config, run, EventWriter(run.events, run.id), StopFlag(), resume=str(ddp_run.last_ckpt))
    logged = read_all(run.events)
    assert logged[0]["type"] == "started" and logged[0]["resumed_from_step"] == ddp_state["step"] == 115
    evals = [e for e in logged if e["type"] == "eval"]
    assert [e["epoch"] for e in evals] == [6]
    assert evals[0]["val_acc"] >= ddp_state["metrics"]["val_acc"] - 0.03  # it went on from the DDP weights
    assert logged[-1]["type"] == "finished" and logged[-1]["steps"] == 6 * 23
