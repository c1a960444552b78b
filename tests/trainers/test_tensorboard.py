"""TensorBoard export: TensorBoard's own reader finds the run's scalars and per-layer histograms."""

from __future__ import annotations

from pathlib import Path

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from trainer_runs import events, make_config, make_run, train


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
