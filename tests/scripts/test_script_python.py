"""A script run with the user's own Python (`--python`, `[script] python`, the active environment's by
default): the script imports what that environment has, `report()` works there without installing
trainconsole into it, torchrun's ranks use it too, and a Python that cannot run it is refused in one line."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXE = str(Path(sys.executable).parent / "trainconsole")
DDP = Path(__file__).resolve().parents[2] / "examples" / "scripts" / "ddp_train.py"

SCRIPT = """
import sys

import mylib  # only the second environment has it
import torch
from trainconsole.trainers import report

print("python", sys.executable)
for step in range(1, 11):
    print(f"step {step}/10 loss {mylib.loss(step):.4f}")
report(val_acc=torch.tensor(0.75))
"""


def venv(where: Path, torch: bool) -> Path:
    """A venv without pip; torch (and the rest of this venv's packages) by a `.pth` line, if asked, and a
    package `mylib` of its own. Returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120)
    site = next(where.glob("lib/python*/site-packages"))
    if torch:
        (site / "deps.pth").write_text(str(Path(importlib.util.find_spec("torch").origin).parents[1]) + "\n")
    (site / "mylib").mkdir()
    (site / "mylib" / "__init__.py").write_text("def loss(step):\n    return 1.0 / step\n")
    return where / "bin" / "python"


def run(home: Path, cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`trainconsole run ARGS --wait` with no environment active but `env`'s."""
    clean = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}
    return subprocess.run([EXE, "run", *args], capture_output=True, text=True, timeout=240, cwd=cwd,
                          env={**clean, "TRAINCONSOLE_HOME": str(home), **env})


def events(home: Path, run_id: str) -> list[dict]:
    return [json.loads(line) for line in (home / "runs" / run_id / "events.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_scripts_run_with_the_users_python(home: Path, tmp_path: Path) -> None:
    other = venv(tmp_path / "other", torch=True)
    (tmp_path / "train.py").write_text(SCRIPT)
    chosen = {"--python": run(home, tmp_path, "--script", "train.py", "--python", str(other), "--wait"),
              "active venv": run(home, tmp_path, "--script", "train.py", "--wait",
                                 VIRTUAL_ENV=str(tmp_path / "other"))}
    for how, out in chosen.items():
        assert out.returncode == 0, (how, out.stderr)
        run_id = out.stdout.splitlines()[0]
        assert f"python {other}" in (home / "runs" / run_id / "stdout.log").read_text(), how
        got = events(home, run_id)
        steps = [e for e in got if e["type"] == "step"]
        assert [e["step"] for e in steps][-1] == 10 and steps[-1]["loss"] == 0.1, (how, steps)
        assert any(e.get("val_acc") == 0.75 for e in got), how  # report() from the second venv
        assert got[-1]["type"] == "finished", how
    ranks = run(home, tmp_path, "--script", str(DDP), "--nproc", "2", "--python", str(other), "--wait",
                "--", "--epochs", "1")
    assert ranks.returncode == 0, ranks.stderr
    got = events(home, ranks.stdout.splitlines()[0])
    assert got[0]["world_size"] == 2 and got[-1]["type"] == "finished"
    assert any(e["type"] == "step" for e in got)


def test_a_python_that_cannot_run_the_script_is_refused_in_one_line(home: Path, tmp_path: Path) -> None:
    bare = venv(tmp_path / "bare", torch=False)
    script = tmp_path / "train.py"
    script.write_text("print('loss 1.0')\n")
    not_python = tmp_path / "not_python"
    not_python.write_text("#!/bin/sh\nexit 3\n")
    not_python.chmod(0o755)
    cases = [(["--python", str(tmp_path / "nowhere")], "script.python"),
             (["--python", str(not_python)], "is not a Python interpreter"),
             (["--python", str(bare), "--nproc", "2"], "has no torch")]
    for args, says in cases:
        out = run(home, tmp_path, "--script", str(script), *args)
        assert out.returncode == 2 and says in out.stderr, (args, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert not (home / "runs").exists() or not any((home / "runs").iterdir())
    plain = run(home, tmp_path, "--script", str(script), "--python", str(bare), "--wait")
    assert plain.returncode == 0, plain.stderr  # no torch needed without --nproc
