"""Weight histograms: TensorBoard's own reader finds the run's scalars and per-layer histograms, and the
compact `histogram` events hold every parameter's range and counts for the console's weights view."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from trainer_runs import events, make_config, make_run, train

from trainconsole.console.core.board import Board, weights_view


def test_tensorboard_reader_finds_scalars_and_histograms(tc_home: Path) -> None:
    config = make_config(train={"epochs": 3, "tensorboard": True, "histogram_every": 2})
    run = make_run(tc_home, config)
    assert train(run) == 0
    board = EventAccumulator(str(run.path / "tensorboard"), size_guidance={"scalars": 0, "histograms": 0})
    board.Reload()
    tags = board.Tags()
    assert {"train/loss", "train/lr", "train/samples_per_s", "val/loss", "val/acc"} <= set(tags["scalars"])
    val_acc = [(s.step, s.value) for s in board.Scalars("val/acc")]
    assert val_acc == [(e["step"], pytest.approx(e["val_acc"])) for e in events(run, "eval")]
    assert len(board.Scalars("train/loss")) == len(events(run, "step"))
    # small_cnn: layers 0 and 3 are convolutions, 7 and 9 linear; histograms at epoch 2 only (every 2)
    expected = {f"weights/{i}.{kind}" for i in (0, 3, 7, 9) for kind in ("weight", "bias")}
    assert set(tags["histograms"]) == expected
    hist = board.Histograms("weights/7.weight")
    assert [h.step for h in hist] == [2] and hist[0].histogram_value.num == 32768  # 128 x (64 x 2 x 2)


def test_no_tensorboard_folder_unless_asked(tc_home: Path) -> None:
    run = make_run(tc_home, make_config(train={"epochs": 1, "max_steps": 3}))
    assert train(run) == 0 and not (run.path / "tensorboard").exists()


def test_histogram_events_hold_every_parameter_and_the_console_draws_them(tc_home: Path) -> None:
    run = make_run(tc_home, make_config(train={"epochs": 3, "histogram_every": 2}))
    assert train(run) == 0
    (hist,) = events(run, "histogram")  # epoch 2 only (every 2)
    weights = torch.load(run.last_ckpt, weights_only=True)["model"]  # epoch 3: one more epoch of training
    assert hist["epoch"] == 2 and hist["bins"] == 16 and set(hist["layers"]) == set(weights)
    for name, entry in hist["layers"].items():
        assert sum(entry["counts"]) == weights[name].numel() and len(entry["counts"]) == 16, name
        assert entry["min"] <= entry["max"]
    assert hist["layers"]["0.bias"]["min"] < hist["layers"]["0.bias"]["max"]  # trained: not all equal
    board = Board()
    board.apply(run.id, events(run))
    history, title, layer = weights_view(board, run.id, "7.weight")
    assert layer == "7.weight" and [s.epoch for s in history] == [2] and "7.weight (5/8)" in title
    assert not (run.path / "tensorboard").exists()  # histogram events need no TensorBoard
