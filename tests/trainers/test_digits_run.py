"""The digits demo end to end: a real trainer process, its events, its checkpoints."""

from __future__ import annotations

from pathlib import Path

import torch
from trainer_runs import CUDA, auto_devices, events, make_config, make_run, train

from trainconsole import protocol
from trainconsole.protocol import RunDir
from trainconsole.trainers.builtin import data, models


def evaluate(model: torch.nn.Module, val: torch.utils.data.TensorDataset) -> float:
    """Validation accuracy of `model` on a tensor dataset."""
    model.eval()
    x, y = val.tensors
    with torch.no_grad():
        return (model(x).argmax(1) == y).float().mean().item()


def test_digits_demo_learns_and_reports(tc_home: Path) -> None:
    config = make_config()  # the defaults are the demo: digits, small_cnn, 5 epochs, batch 64, sgd 0.05
    run = make_run(tc_home, config)
    assert train(run, timeout=180) == 0, run.stderr.read_text()  # speed is benchmarked, not asserted

    finished = events(run, "finished")
    assert len(finished) == 1 and finished[0]["best_val_acc"] >= 0.90
    assert finished[0]["epochs"] == 5 and finished[0]["steps"] == 5 * 23
    info = run.read_info()
    assert protocol.run_status(run) == "finished" and info["exit_code"] == 0 and info["ended_at"] > 0
    check_event_fields(run)
    check_best_checkpoint(run, config, finished[0]["best_val_acc"])


def check_event_fields(run: RunDir) -> None:
    """started / step / eval / checkpoint carry the documented fields; the loss fell."""
    kinds = [e["type"] for e in events(run)]
    assert kinds[0] == "started" and kinds[-1] == "finished"
    started = events(run, "started")[0]
    assert {"strategy", "world_size", "devices", "params", "trainable_params", "resumed_from_step",
            "pid"} <= started.keys()
    assert started["devices"] == auto_devices() and started["params"] == started["trainable_params"] > 0
    steps = events(run, "step")
    for e in steps:
        assert {"step", "epoch", "loss", "count", "lr", "samples_per_s", "mem"} <= e.keys()
        assert e["mem"]["rss"] > 0 and e["samples_per_s"] > 0
        assert [d["device"] for d in e["mem"]["devices"]] == ([] if not CUDA else auto_devices())
    assert [e["step"] for e in steps] == sorted({e["step"] for e in steps})  # increasing, no repeats
    assert sum(e["count"] for e in steps) == steps[-1]["step"]  # every step is in exactly one mean
    # The run's totals, from which every view takes its samples/s: every sample of the 5 epochs (23
    # batches of 64, the last one short), over training seconds that are within the run's wall time.
    assert 5 * 22 * 64 < steps[-1]["samples"] < 5 * 23 * 64
    assert 0 < steps[-1]["train_s"] < events(run, "finished")[0]["t"] - events(run, "started")[0]["t"]
    assert [e["samples"] for e in steps] == sorted(e["samples"] for e in steps)
    assert steps[-1]["loss"] < steps[0]["loss"] / 3
    evals = events(run, "eval")
    assert [e["epoch"] for e in evals] == [1, 2, 3, 4, 5]
    assert all(0 <= e["val_acc"] <= 1 and e["val_loss"] > 0 for e in evals)
    ckpts = events(run, "checkpoint")
    assert {Path(e["path"]).name for e in ckpts} == {"last.pt", "best.pt"}
    assert all(e["is_best"] == (Path(e["path"]).name == "best.pt") for e in ckpts)


def check_best_checkpoint(run: RunDir, config: dict, best_acc: float) -> None:
    """best.pt loads with weights_only=True into a fresh model that scores the same accuracy."""
    state = torch.load(run.best_ckpt, map_location="cpu", weights_only=True)
    assert {"model", "optimizer", "scaler", "epoch", "step", "config", "metrics"} <= state.keys()
    assert not any(k.startswith("module.") for k in state["model"])
    assert state["config"] == config and state["metrics"]["val_acc"] == best_acc
    split = data.build(config)
    model = models.build(config, split.num_classes, split.input_shape)
    model.load_state_dict(state["model"])
    assert abs(evaluate(model, split.val) - best_acc) < 1e-6
