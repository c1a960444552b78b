"""Every optimizer of a script run, measured by the probe (real torch, real `trainconsole run --script`;
fixtures/probe/optimizers.py keeps its own counters): a GAN's two optimizers each with its own loss under
the script's names, never their mean; gradient accumulation's step loss the script's own (the sum of the
divided micro-batch losses) and its steps the optimizer's; the largest param group's lr the headline; a
hand-written update without an optimizer counted step by step."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from processes import wait_for
from script_helpers import EXE, FIXTURES

SCRIPT = FIXTURES / "probe" / "optimizers.py"
SHAPES = {"gan": ("--gan",), "accumulate": ("--accumulate", "4"), "groups": ("--groups",),
          "by_hand": ("--by-hand",)}
ENDS = ("finished", "failed", "stopped", "killed")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[list[dict[str, Any]], dict[str, Any]]]:
    """Each shape run at once; its events and the script's own counters, by name."""
    root = tmp_path_factory.mktemp("optimizers")
    env = {**os.environ, "TRAINCONSOLE_HOME": str(root / "home")}
    started = {}
    for shape, args in SHAPES.items():
        out = subprocess.run([EXE, "run", "--script", str(SCRIPT), "--", *args, "--counters",
                              str(root / f"{shape}.json")], env=env, capture_output=True, text=True,
                             timeout=120, check=True)
        started[shape] = root / "home" / "runs" / out.stdout.split()[0] / "events.jsonl"
    return {shape: (ended(path), json.loads((root / f"{shape}.json").read_text()))
            for shape, path in started.items()}


def ended(path: Path) -> list[dict[str, Any]]:
    """The run's events once it has ended."""
    wait_for(lambda: path.exists() and any(f'"type":"{k}"' in path.read_text() for k in ENDS), timeout=240,
             what=f"{path.parent.name} to end")
    return [json.loads(line) for line in path.read_text().splitlines()]


def probed(got: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in got if e["type"] == "step" and e.get("source") == "probe"]


def window_means(events: list[dict[str, Any]], own: dict[str, Any], key: str) -> list[float]:
    """The script's own KEY loss, averaged over each event's steps (those since the previous event)."""
    loss_of = dict(zip(own["steps"], (s[key] for s in own["losses"]), strict=True))
    means, last = [], 0
    for e in events:
        window = [loss_of[s] for s in range(last + 1, e["step"] + 1)]
        means.append(sum(window) / len(window))
        last = e["step"]
    return means


def test_each_optimizer_its_own_loss_under_the_scripts_names(runs: dict[str, Any]) -> None:
    got, own = runs["gan"]
    steps = probed(got)
    assert steps[-1]["step"] == own["steps"][-1] == got[-1]["step"]  # the iteration, not both optimizers'
    assert all("loss" not in e for e in steps)  # never the mean of the two networks' losses
    for key in ("loss_d", "loss_g"):  # `optimizerD` / `optimizerG`: as the script prints `Loss_D`
        assert [e[key] for e in steps] == pytest.approx(window_means(steps, own, key))
    printed = [e for e in got if e["type"] == "step" and e.get("source") == "text"]
    assert {k for e in printed for k in e if k.startswith("loss")} == {"loss_d", "loss_g"}


def test_accumulated_gradients_one_step_the_scripts_own_loss(runs: dict[str, Any]) -> None:
    got, own = runs["accumulate"]
    steps = probed(got)
    assert steps[-1]["step"] == own["steps"][-1] == 30  # optimizer steps, not the 120 backward calls
    assert [e["loss"] for e in steps] == pytest.approx(window_means(steps, own, "loss"))


def test_the_largest_param_groups_lr_is_the_headline(runs: dict[str, Any]) -> None:
    got, own = runs["groups"]
    steps = probed(got)
    assert own["lrs"][-1] == [0.1, 0.01]
    assert all(e["lr"] == 0.01 and e["lrs"] == [0.1, 0.01] for e in steps)
    assert [e["loss"] for e in steps] == pytest.approx(window_means(steps, own, "loss"))


def test_a_hand_written_update_is_a_step(runs: dict[str, Any]) -> None:
    got, own = runs["by_hand"]
    steps = probed(got)
    assert steps[-1]["step"] == own["steps"][-1] == 30 == got[-1]["step"]
    assert [e["loss"] for e in steps] == pytest.approx(window_means(steps, own, "loss"))
    printed = [e for e in got if e["type"] == "step" and e.get("source") == "text"]  # `9 0.53`: t, loss
    loss_of = {s: own["losses"][s - 1]["loss"] for s in own["steps"]}
    assert [(e["step"], e["loss"]) for e in printed] == [(s, pytest.approx(loss_of[s])) for s in (10, 20, 30)]


@pytest.mark.parametrize("shape", list(SHAPES))
def test_one_series_in_step_order(runs: dict[str, Any], shape: str) -> None:
    got, _ = runs[shape]  # a printed line joins the step it was printed at: never a step event going back
    steps = [e["step"] for e in got if e["type"] == "step"]
    assert steps == sorted(steps) and len(steps) > 2
