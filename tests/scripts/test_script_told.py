"""What the console tells of the most ordinary script (issue 43): `epoch E loss L val_loss VL val_acc VA`
after a `torch.no_grad()` validation, probe on and off, with and without torch. Every pair is stored under
its own name (the train loss as the loss, `val_loss` and `val_acc` the evaluation's), the last epoch's
validation (printed after the last optimizer step) is an evaluation, not a `result`, and `best_val_acc` is
the best of them all. Checked against the script's own counters and printed figures."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from processes import wait_for
from script_helpers import EXE, FIXTURES, cli, events

TOLD = FIXTURES / "told"
ENDS = ("finished", "failed", "stopped", "killed")
METRICS = ("loss", "val_loss", "val_acc")

pytestmark = pytest.mark.slow


def run(home: Path, cwd: Path, script: Path, *args: str, flags: tuple[str, ...] = ()) -> str:
    """`trainconsole run --script SCRIPT FLAGS -- ARGS`, waited for; the run's id."""
    out = subprocess.run([EXE, "run", "--script", str(script), *flags, "--wait", "--", *args], cwd=cwd,
                         capture_output=True, text=True, timeout=300, env=os.environ.copy())
    run_id = out.stdout.split()[0]
    wait_for(lambda: any(e["type"] in ENDS for e in events(home, run_id)), timeout=30, what="the end")
    return run_id


def last(run_id: str) -> dict[str, Any]:
    """The run's last figures as `trainconsole ls --json` gives them."""
    out = cli("ls", "--json")
    assert out.returncode == 0, out.stderr
    return {r["id"]: r for r in json.loads(out.stdout)}[run_id]["last"]


def named(got: list[dict[str, Any]], key: str) -> list[tuple[str, float]]:
    """Every (event type, value) that carries KEY, from the script's printed lines."""
    kinds = ("step", "summary", "eval", "result")  # (a `finished` event carries the probe's last loss)
    return [(e["type"], e[key]) for e in got if key in e and e["type"] in kinds
            and e.get("source", "text") == "text"]


def check(home: Path, run_id: str, printed: list[dict[str, Any]], steps: list[int] | None) -> None:
    """Each printed figure under its own name; every validation an evaluation (at its step); the best."""
    got = events(home, run_id)
    assert got[-1]["type"] == "finished"
    assert not [e for e in got if e["type"] == "result"]  # nothing was evaluated after training
    evals = [e for e in got if e["type"] == "eval"]
    for key in METRICS[1:]:
        if key in printed[0]:
            assert [e[key] for e in evals] == [p[key] for p in printed]
    if steps is not None:
        assert [e["step"] for e in evals] == steps
    assert [v for _, v in named(got, "loss")] == [p["loss"] for p in printed]  # the train loss, as printed
    assert not [e for e in got if e["type"] == "step" and set(METRICS[1:]) & e.keys()]
    best = max(p["val_acc"] for p in printed)
    figures = last(run_id)
    assert (figures["best_val_acc"], figures["val_acc"]) == (best, printed[-1]["val_acc"])


@pytest.mark.parametrize("flags, args", [((), ()), ((), ("--no-eval-mode",)), (("--no-measure",), ())],
                         ids=["probe", "probe-no-grad-only", "no-probe"])
def test_every_pair_under_its_own_name_and_the_last_validation_an_evaluation(
        home: Path, tmp_path: Path, flags: tuple[str, ...], args: tuple[str, ...]) -> None:
    run_id = run(home, tmp_path, TOLD / "per_epoch.py", "--counters", "c.json", *args, flags=flags)
    own = json.loads((tmp_path / "c.json").read_text())
    printed = own["printed"]
    assert len({p["val_acc"] for p in printed}) > 1  # a best to find
    measured = not flags
    check(home, run_id, printed, [p["step"] for p in printed] if measured else None)


@pytest.mark.parametrize("flags", [(), ("--no-measure",)], ids=["probe", "no-probe"])
def test_without_torch(home: Path, tmp_path: Path, flags: tuple[str, ...]) -> None:
    run_id = run(home, tmp_path, TOLD / "per_epoch_no_torch.py", flags=flags)
    printed = [{"loss": loss, "val_acc": acc} for loss, acc in ((0.50, 0.85), (0.41, 0.88), (0.37, 0.87))]
    check(home, run_id, printed, [1, 2, 3])
