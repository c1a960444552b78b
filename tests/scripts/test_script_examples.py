"""The example scripts in examples/scripts/ run as script runs and learn."""

from __future__ import annotations

from pathlib import Path

import pytest
from script_helpers import cli, of_type

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("script", "extra"), [("report_train.py", []), ("ddp_train.py", ["--nproc", "2"])])
def test_example_script_finishes_and_learns(home: Path, script: str, extra: list[str]) -> None:
    path = ROOT / "examples" / "scripts" / script
    out = cli("run", "--script", str(path), *extra, "--wait", "--", "--epochs", "2", cwd=ROOT)
    assert out.returncode == 0, out.stderr
    run_id = out.stdout.split()[0]
    steps, evals = of_type(home, run_id, "step"), of_type(home, run_id, "eval")
    # the script's own loss fell (the probe's step events leave out a loss the script reports itself)
    losses = [e["loss"] for e in steps if "loss" in e]
    assert losses and losses[-1] < losses[0]
    assert len(evals) == 2 and evals[-1]["val_acc"] > 0.8
