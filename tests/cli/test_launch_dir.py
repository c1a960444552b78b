"""Runs launched from a directory holding packages named like ours: each kind still runs our code, a
plug-in in that directory is still found, and the shipped demos run from there."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from processes import wait_for

EXE = str(Path(sys.executable).parent / "trainconsole")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

#: A model plug-in that lives only in the launch directory.
PLUGIN = '''
import math

from torch import nn


def tiny(config, num_classes, input_shape):
    return nn.Sequential(nn.Flatten(), nn.Linear(math.prod(input_shape), num_classes))
'''


def decoys(where: Path) -> None:
    """`trainers/`, `console/` and `trainconsole/` packages that fail when imported, and a plug-in."""
    for name in ("trainers", "console", "trainconsole"):
        (where / name).mkdir()
        (where / name / "__init__.py").write_text(f"raise ImportError('the launch directory\\'s {name}')\n")
    (where / "myplug").mkdir()
    (where / "myplug" / "__init__.py").write_text("")
    (where / "myplug" / "nets.py").write_text(PLUGIN)


def start(where: Path, *args: str) -> str:
    """Start a run from `where`; its id."""
    out = subprocess.run([EXE, *args], capture_output=True, text=True, timeout=120, cwd=where)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()[-1]


def statuses(where: Path) -> dict[str, str]:
    out = subprocess.run([EXE, "ls", "--json"], capture_output=True, text=True, timeout=60, cwd=where)
    assert out.returncode == 0, out.stderr
    return {row["id"]: row["status"] for row in json.loads(out.stdout)}


@pytest.mark.slow
def test_every_launch_kind_runs_ours_from_a_directory_with_packages_named_like_ours(
        home: Path, tmp_path: Path) -> None:
    where = tmp_path / "project"
    where.mkdir()
    decoys(where)
    one_epoch = ["--set", "train.epochs=1"]
    runs = {
        "train (plug-in model)": start(where, "run", str(EXAMPLES / "digits.toml"), *one_epoch,
                                       "--set", "model.name='myplug.nets:tiny'"),
        "ddp": start(where, "run", str(EXAMPLES / "digits_ddp.toml"), *one_epoch),
        "queued (the demo)": start(where, "run", "--demo", *one_epoch, "--set", "strategy.queue=true"),
        "script": start(where, "run", "--script", str(EXAMPLES / "scripts" / "report_train.py"),
                        "--", "--epochs", "1"),
        "tune (the demo, plug-in model)": start(where, "tune", "--demo", "--set", "tune.num_samples=2",
                                                "--set", "tune.max_t=1",
                                                "--set", "model.name='myplug.nets:tiny'"),
    }
    wait_for(lambda: all(s not in ("running", "queued") for s in statuses(where).values()), timeout=280,
             what="every run to end")
    ended = statuses(where)
    logs = {kind: (home / "runs" / run_id / "stderr.log").read_text()[-600:] for kind, run_id in runs.items()
            if ended[run_id] != "finished"}
    assert {kind: ended[run_id] for kind, run_id in runs.items()} == dict.fromkeys(runs, "finished"), logs
