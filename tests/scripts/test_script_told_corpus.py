"""Scripts shaped as public scripts that validate (fixtures/told_corpus/: the originals' loops and format
strings, written here, real torch), run with the probe and without: every evaluation (its count, steps,
names and figures) checked against what the script computed and counted itself (fixtures/probe_corpus/
counters.py), never a `result` for a validation printed after the last step, a table's values under its
header's names, and a tqdm bar over a validation loop never a metric."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from processes import wait_for
from script_helpers import EXE, FIXTURES

CORPUS = FIXTURES / "told_corpus"
ENDS = ("finished", "failed", "stopped", "killed")
SKIP = ("v", "t", "run", "type", "step", "epoch", "source", "timing", "epochs", "mem")

pytestmark = pytest.mark.slow


def run(tmp: Path, name: str, measure: bool) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The script run with (or without) the probe: its events once ended, and its own counters."""
    cwd = tmp / name
    cwd.mkdir()
    env = {**os.environ, "TRAINCONSOLE_HOME": str(tmp / "home"), "COUNTERS": str(cwd / "c.json"),
           "PYTHONPATH": str(FIXTURES / "probe_corpus")}
    flags = () if measure else ("--no-measure",)
    out = subprocess.run([EXE, "run", "--script", str(CORPUS / f"{name}.py"), *flags], cwd=cwd, env=env,
                         capture_output=True, text=True, timeout=120, check=True)
    path = tmp / "home" / "runs" / out.stdout.split()[0] / "events.jsonl"
    wait_for(lambda: path.exists() and any(f'"type":"{k}"' in path.read_text() for k in ENDS), timeout=240,
             what=f"{name} to end")
    wait_for(lambda: (cwd / "c.json").exists(), timeout=10, what="its counters")
    got = [json.loads(line) for line in path.read_text().splitlines()]
    return got, json.loads((cwd / "c.json").read_text())


def printed(got: list[dict[str, Any]], kind: str) -> list[tuple[int, Any, dict[str, Any]]]:
    """The events of KIND from printed lines: step, epoch, figures."""
    return [(e["step"], e.get("epoch"), {k: v for k, v in e.items() if k not in SKIP})
            for e in got if e["type"] == kind and e.get("source", "text") == "text"]


def own(counted: dict[str, Any], kind: str) -> list[tuple[int, Any, dict[str, Any]]]:
    """What the script printed of KIND, by its own counters."""
    return [(p["step"], p["epoch"], p["fields"]) for p in counted["printed"] if p["kind"] == kind]


def no_progress_metrics(got: list[dict[str, Any]]) -> None:
    """No result, and no figure named after a progress bar (`val_round` of `Validation round: 43%`)."""
    assert not [e for e in got if e["type"] == "result"]
    assert not [e for e in got if any("round" in k for k in e)]


@pytest.mark.parametrize("name", ["fullbatch_every_n", "skorch_table"])
def test_every_validation_an_evaluation_at_its_step(tmp_path: Path, name: str) -> None:
    got, counted = run(tmp_path, name, measure=True)
    assert got[-1]["type"] == "finished" and got[-1]["step"] == counted["steps"]
    assert printed(got, "eval") == own(counted, "eval")  # the last one too, printed after the last step
    assert printed(got, "summary") == own(counted, "summary")  # the epoch's train loss, named as printed
    assert not printed(got, "step")  # no second loss at a step the probe measured
    best = max(f["val_acc"] for _, _, f in own(counted, "eval"))
    assert got[-1]["best_val_acc"] == best
    no_progress_metrics(got)


def test_a_table_without_the_probe(tmp_path: Path) -> None:
    got, counted = run(tmp_path, "skorch_table", measure=False)
    assert [f for _, _, f in printed(got, "eval")] == [f for _, _, f in own(counted, "eval")]
    assert [f for _, _, f in printed(got, "step")] == [f for _, _, f in own(counted, "summary")]
    assert all("time_s" in e["timing"] for e in got if e["type"] == "step")  # skorch's `dur`
    no_progress_metrics(got)


@pytest.mark.parametrize("measure", [True, False], ids=["probe", "no-probe"])
def test_validation_rounds_logged_to_stderr_under_a_tqdm_bar(tmp_path: Path, measure: bool) -> None:
    got, counted = run(tmp_path, "unet_validation_rounds", measure)
    evals = [(e["step"], e["epoch"], {"val_dice_score": e["val_dice_score"]}) for e in counted["evals"]]
    if measure:  # each round at the optimizer step it followed, the last after the last step
        assert printed(got, "eval") == evals
    else:
        assert [f for _, _, f in printed(got, "eval")] == [f for _, _, f in evals]
    no_progress_metrics(got)


def test_an_epochs_mean_loss_is_its_summary(tmp_path: Path) -> None:
    got, counted = run(tmp_path, "super_resolution_epochs", measure=True)
    assert got[-1]["type"] == "finished" and got[-1]["step"] == counted["steps"]
    losses = [e for e in printed(got, "step") if "psnr" not in e[2]]
    assert losses == own(counted, "step")  # each iteration's loss at its step, once
    assert printed(got, "summary") == own(counted, "summary")  # `Avg. Loss`: never a second loss at a step
    # The PSNR, printed just after the no_grad block ends, is at its step; that it is an evaluation needs
    # the probe to stamp "an evaluation pass ran since the last step" (not yet: it is a step's figure).
    psnr = [(e["step"], e["psnr"]) for e in got if "psnr" in e]
    assert psnr == [(p["step"], p["fields"]["psnr"]) for p in counted["printed"] if p["kind"] == "psnr"]
    no_progress_metrics(got)
