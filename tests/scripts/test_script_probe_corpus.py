"""Scripts printed as public training scripts print (fixtures/probe_corpus/: the originals' loops and format
strings, real torch), run with the probe: every step, epoch, phase and metric of their events is checked
against what the script counted itself (`counters.py`: each printed line with the optimizer steps made
when it was printed), not against what a reader is expected to say."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from processes import wait_for
from script_helpers import EXE, FIXTURES

CORPUS = FIXTURES / "probe_corpus"
SCRIPTS = ("yunjey_linear_regression", "yunjey_language_model", "makemore", "hogwild", "introyt_training",
           "bentrevett_sentiment", "kuangliu_cifar", "yunjey_feedforward", "eval_mode_training",
           "train_mode_test", "split_sets")
ENDS = ("finished", "failed", "stopped", "killed")
KINDS = ("step", "eval", "result")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[list[dict[str, Any]], Path]]:
    """Every script run at once (each in its own folder); its events and folder, by name."""
    started = launch_all(tmp_path_factory.mktemp("probe_corpus"), SCRIPTS)
    return {name: (ended(run), cwd) for name, (run, cwd) in started.items()}


def launch_all(root: Path, scripts: tuple[str, ...]) -> dict[str, tuple[Path, Path]]:
    """Start every corpus script as a run (each in its own folder, counting into its `c.json`); the run's
    directory and the folder, by name."""
    started = {}
    for name in scripts:
        cwd = root / name
        cwd.mkdir()
        env = {**os.environ, "TRAINCONSOLE_HOME": str(root / "home"), "COUNTERS": str(cwd / "c.json"),
               "PYTHONPATH": str(CORPUS)}
        out = subprocess.run([EXE, "run", "--script", str(CORPUS / f"{name}.py")], cwd=cwd, env=env,
                             capture_output=True, text=True, timeout=120, check=True)
        started[name] = (root / "home" / "runs" / out.stdout.split()[0], cwd)
    return started


def ended(run: Path) -> list[dict[str, Any]]:
    """The run's events once it has ended."""
    path = run / "events.jsonl"
    wait_for(lambda: path.exists() and any(f'"type":"{k}"' in path.read_text() for k in ENDS), timeout=240,
             what=f"{run.name} to end")
    return [json.loads(line) for line in path.read_text().splitlines()]


def from_text(got: list[dict[str, Any]]) -> list[tuple[str, int, Any, dict[str, Any]]]:
    """The events of printed lines: kind, step, epoch, metrics."""
    skip = ("v", "t", "run", "type", "step", "epoch", "source", "timing")
    return [(e["type"], e["step"], e.get("epoch"), {k: v for k, v in e.items() if k not in skip})
            for e in got if e.get("source") == "text"]


def own(printed: list[dict[str, Any]]) -> list[tuple[str, int, Any, dict[str, Any]]]:
    """What the script printed, by its own counters (lines of kind `none` give no event)."""
    return [(p["kind"], p["step"], p["epoch"], p["fields"]) for p in printed if p["kind"] != "none"]


@pytest.mark.parametrize("name", ["yunjey_linear_regression", "yunjey_language_model", "makemore",
                                  "introyt_training", "bentrevett_sentiment", "kuangliu_cifar",
                                  "yunjey_feedforward", "eval_mode_training", "train_mode_test",
                                  "split_sets"])
def test_each_printed_line_at_the_step_the_script_made(runs: dict[str, Any], name: str) -> None:
    got, cwd = runs[name]
    counted = json.loads((cwd / "c.json").read_text())
    assert got[-1]["type"] == "finished" and got[-1]["step"] == counted["steps"]
    printed = own(counted["printed"])
    if name == "makemore":  # it prints no epoch: the probe's (its InfiniteDataLoader is iterated once)
        printed = [(k, s, 1, f) for k, s, _, f in printed]
    assert from_text(got) == printed
    probe = [e for e in got if e.get("source") == "probe"]
    assert probe[-1]["step"] == counted["steps"] and all(e["step"] <= counted["steps"] for e in got
                                                         if "step" in e)


def test_full_batch_steps_are_epochs(runs: dict[str, Any]) -> None:
    got, _ = runs["yunjey_linear_regression"]  # `Epoch [5/60]`: step 5, not the 1st printed line
    assert [e["step"] for e in got if e.get("source") == "text"] == list(range(5, 61, 5))


def test_lines_after_training_move_nothing(runs: dict[str, Any]) -> None:
    got, cwd = runs["yunjey_language_model"]  # `Sampled [60/60] words` after the last step
    log = (cwd.parent / "home" / "runs" / got[0]["run"] / "stdout.log").read_text()
    assert "Sampled [60/60] words" in log
    assert max(e["step"] for e in got if "step" in e) == json.loads((cwd / "c.json").read_text())["steps"]


def test_a_config_dump_and_a_train_split_evaluation(runs: dict[str, Any]) -> None:
    got, _ = runs["makemore"]
    assert not [e for e in got if "learning_rate" in e or "weight_decay" in e]  # `{'learning_rate': ..}`
    evals = [e for e in got if e["type"] == "eval"]
    assert [sorted(k for k in e if k.endswith("_loss")) for e in evals] == [["test_loss", "train_loss"]] * 2


def test_worker_processes_never_merge(runs: dict[str, Any]) -> None:
    got, cwd = runs["hogwild"]
    workers = [json.loads(p.read_text()) for p in cwd.glob("c.json.*") if p.suffix != ".test"]
    steps = [e for e in from_text(got) if e[0] == "step"]
    main = next(w for w in workers if own(w["printed"])[0] == steps[0])  # the first worker to step
    assert all(e in own(main["printed"]) for e in steps) and len(steps) >= len(main["printed"]) - 1
    assert [e[1] for e in steps] == sorted({e[1] for e in steps})  # one series, never backwards
    test = json.loads((cwd / "c.json.test").read_text())
    results = [e for e in got if e["type"] == "result"]  # the parent's test, after the workers ended
    assert [(e["test_loss"], e["test_acc"]) for e in results] == [(test["loss"], test["acc"])]


def test_train_x_valid_y_and_a_chart_with_a_title(runs: dict[str, Any]) -> None:
    got, _ = runs["introyt_training"]  # `LOSS train 1.07 valid 1.08`, add_scalars('Training vs. ...')
    assert [sorted(k for k in e if k.endswith("loss")) for e in got if e["type"] in ("eval", "result")
            and e["source"] == "text"] == [["train_loss", "val_loss"]] * 2
    charted = [e for e in got if e.get("source") == "tensorboard"]
    assert {k for e in charted for k in e if "loss" in k} == {"loss", "val_loss"}  # never the title
    assert [e["val_loss"] for e in charted if e["type"] == "eval"] == [
        e["val_loss"] for e in got if e["type"] in ("eval", "result") and e["source"] == "text"]
