"""Public scripts of the shapes the probe measures beyond one optimizer (fixtures/probe_corpus/: the
originals' loops and format strings, real torch): pytorch/examples' DCGAN (two optimizers stepped in turn)
pytorch/tutorials' polynomial_autograd (no optimizer: a hand-written update) and facebookresearch/mae's
fine-tuning (layer-wise lr decay, gradient accumulation) and optuna-examples' pytorch_simple (a study: a new
model and optimizer each trial, each trial a segment of the run). Every step, printed line, loss and lr
checked against what the script counted itself (`counters.py`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from processes import wait_for
from test_script_probe_corpus import from_text, launch_all, own

SCRIPTS = ("pytorch_dcgan", "polynomial_autograd", "mae_finetune", "optuna_pytorch_simple")
ENDS = ("finished", "failed", "stopped", "killed")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[list[dict[str, Any]], dict[str, Any]]]:
    """Every script run at once; its events and its own counters, by name."""
    started = launch_all(tmp_path_factory.mktemp("probe_corpus_optimizers"), SCRIPTS)
    return {name: (ended(run / "events.jsonl"), json.loads((cwd / "c.json").read_text()))
            for name, (run, cwd) in started.items()}


def ended(path: Path) -> list[dict[str, Any]]:
    wait_for(lambda: path.exists() and any(f'"type":"{k}"' in path.read_text() for k in ENDS), timeout=240,
             what=f"{path.parent.name} to end")
    return [json.loads(line) for line in path.read_text().splitlines()]


def window_means(events: list[dict[str, Any]], losses: list[float]) -> list[float]:
    """The script's own losses (one a step), averaged over each event's steps (since the previous one)."""
    means, last = [], 0
    for e in events:
        means.append(sum(losses[last:e["step"]]) / (e["step"] - last))
        last = e["step"]
    return means


@pytest.mark.parametrize("name", SCRIPTS[:2])
def test_each_printed_line_at_the_step_the_script_made_in_order(runs: dict[str, Any], name: str) -> None:
    got, counted = runs[name]
    assert got[-1]["type"] == "finished" and got[-1]["step"] == counted["steps"]
    assert from_text(got) == own(counted["printed"])
    steps = [e["step"] for e in got if e["type"] == "step"]
    assert steps == sorted(steps)  # one series, never a step event going back


def test_dcgan_each_networks_loss_never_their_mean(runs: dict[str, Any]) -> None:
    got, counted = runs["pytorch_dcgan"]
    probed = [e for e in got if e["type"] == "step" and e["source"] == "probe"]
    assert probed and all("loss" not in e for e in probed)
    for key in ("loss_d", "loss_g"):  # optimizerD, optimizerG: the names the script prints (`Loss_D`)
        assert [e[key] for e in probed] == pytest.approx(window_means(probed, counted[key]))


def test_a_hand_written_update_counts_its_steps(runs: dict[str, Any]) -> None:
    got, counted = runs["polynomial_autograd"]
    probed = [e for e in got if e["type"] == "step" and e["source"] == "probe"]
    assert counted["steps"] == 2000 == probed[-1]["step"]
    assert [e["loss"] for e in probed] == pytest.approx(window_means(probed, counted["losses"]))


def test_layer_decay_and_accumulation_the_steps_losses_and_lrs_the_scripts(runs: dict[str, Any]) -> None:
    got, counted = runs["mae_finetune"]
    probed = [e for e in got if e["type"] == "step" and e["source"] == "probe"]
    assert counted["steps"] == 20 == probed[-1]["step"] == got[-1]["step"]  # 40 iterations, 2 a step
    assert [e["loss"] for e in probed] == pytest.approx(window_means(probed, counted["losses"]))
    largest = counted["largest"]  # the first block's weights: the largest of its 8 groups
    lrs = [counted["lrs"][e["step"] - 1] for e in probed]
    assert [e["lr"] for e in probed] == pytest.approx([each[largest] for each in lrs])
    assert [e["lrs"] for e in probed] == [pytest.approx(each) for each in lrs]
    steps = [e["step"] for e in got if e["type"] == "step"]
    assert steps == sorted(steps)


def test_a_study_each_trials_model_its_segment(runs: dict[str, Any]) -> None:
    got, counted = runs["optuna_pytorch_simple"]
    trials = counted["trials"]  # each trial's optimizer steps
    assert len(trials) == 5 and got[-1]["type"] == "finished" and got[-1]["step"] == sum(trials)
    probed = [e for e in got if e["type"] == "step" and e["source"] == "probe"]
    ends = [sum(trials[:i + 1]) for i in range(len(trials))]  # the run's step goes on across the trials
    for e in probed:
        segment = e.get("segment", 1)
        assert ends[segment - 1] - trials[segment - 1] < e["step"] <= ends[segment - 1]
    assert {e.get("segment", 1) for e in probed} == {1, 2, 3, 4, 5}  # every trial's model, not the first's
    steps = [e["step"] for e in got if e["type"] == "step"]
    assert steps == sorted(steps)
