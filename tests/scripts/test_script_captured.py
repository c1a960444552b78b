"""Output captured from the real libraries (fixtures/captured/, made by the capture_*.py beside it where
the library was installed) read exactly: each logged value at the step the library itself recorded."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from script_helpers import FIXTURES

from trainconsole.protocol import EventWriter
from trainconsole.trainers.scripts.output import OutputEvents, Pump

CAPTURED = FIXTURES / "captured"


def replay(tmp_path: Path, streams: list[tuple[str, str]]) -> list[dict]:
    """Feed captured pipes through real Pumps, one after the other (one pipe's reader ahead of the other,
    as may happen); the events made."""
    path = tmp_path / "events.jsonl"
    events = OutputEvents(EventWriter(path, "r"), [])
    for name, stream in streams:
        fd, log = os.open(CAPTURED / name, os.O_RDONLY), os.open(os.devnull, os.O_WRONLY)
        Pump(fd, log, getattr(events, stream)).run()
        os.close(fd)
        os.close(log)
    events.close()
    return [json.loads(line) for line in path.read_text().splitlines()]


def shown(value: float) -> float:
    """transformers 5 prints each float with 4 significant digits."""
    return float(f"{value:.4g}")


@pytest.mark.parametrize("stderr_first", [True, False])
def test_transformers_trainer_logs_at_the_steps_the_trainer_recorded(tmp_path: Path,
                                                                     stderr_first: bool) -> None:
    streams = [("hf_trainer.stderr", "stderr"), ("hf_trainer.stdout", "stdout")]
    got = replay(tmp_path, streams if stderr_first else streams[::-1])  # either pipe's reader ahead
    history = json.loads((CAPTURED / "hf_trainer_log_history.json").read_text())
    expected = []
    for log in history:  # the Trainer's own record: each log with its global step
        step, epoch = log.pop("step"), shown(log.pop("epoch"))
        if "train_runtime" in log:
            expected.append(("result", step, epoch, {"train_loss": shown(log["train_loss"])}))
        elif "eval_loss" in log:
            expected.append(("eval", step, epoch, {"val_loss": shown(log["eval_loss"])}))
        else:
            expected.append(("step", step, epoch, {"loss": shown(log["loss"]), "grad_norm": shown(
                log["grad_norm"]), "lr": shown(log["learning_rate"])}))
    metrics = ("loss", "grad_norm", "lr", "val_loss", "train_loss")
    assert [(e["type"], e["step"], e["epoch"], {k: e[k] for k in metrics if k in e}) for e in got] == expected
    assert {k for e in got for k in e.get("timing", {})} == {
        "val_runtime", "val_samples_per_second", "val_steps_per_second", "train_runtime",
        "train_samples_per_second", "train_steps_per_second"}


def test_keras_fit_steps_and_each_epochs_values_as_keras_recorded_them(tmp_path: Path) -> None:
    got = replay(tmp_path, [("keras_fit.stderr", "stderr"), ("keras_fit.stdout", "stdout")])
    history = json.loads((CAPTURED / "keras_fit_history.json").read_text())
    steps = [e for e in got if e["type"] == "step"]
    # every batch was drawn: 2 epochs of 5, counted on across the epochs
    assert [(e["step"], e["epoch"], e["epochs"]) for e in steps] == [
        (s, (s - 1) // 5 + 1, 2) for s in range(1, 11)]
    four = [round(v, 4) for v in history["loss"]]  # Keras shows 4 decimals
    assert [e["loss"] for e in steps if e["step"] % 5 == 0] == four
    assert [e["acc"] for e in steps if e["step"] % 5 == 0] == [round(v, 4) for v in history["accuracy"]]
    assert [(e["step"], e["val_loss"], e["val_acc"]) for e in got if e["type"] == "eval"] == [
        (5 * (i + 1), round(history["val_loss"][i], 4), round(history["val_accuracy"][i], 4)) for i in (0, 1)]
    assert all(set(e["timing"]) == {"ms_per_step"} for e in steps)


def test_trainer_lines_without_a_bar_are_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """tqdm off (PrinterCallback): once no bar came for a while, each training line is the next step."""
    monkeypatch.setattr("trainconsole.trainers.scripts.redraws.NO_BAR_S", 0.0)
    events = OutputEvents(EventWriter(tmp_path / "events.jsonl", "r"), [])
    for line in ("{'loss': '0.69', 'epoch': '0.5'}", "{'eval_loss': '0.6', 'epoch': '1'}",
                 "{'loss': '0.65', 'epoch': '1.5'}"):
        events.stdout(line)
    events.close()
    got = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert [(e["type"], e["step"], e["epoch"]) for e in got] == [("step", 1, 0.5), ("eval", 1, 1),
                                                                 ("step", 2, 1.5)]
