"""A run that does not use Slurm never calls a Slurm command: with every Slurm client on PATH recording its
call (and failing, as on a host without a controller), a local run's launch, listing, logs, stop, resume
and kill ask none of them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from processes import wait_for

EXE = str(Path(sys.executable).parent / "trainconsole")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CLIENTS = ("sbatch", "squeue", "scancel", "sacct", "scontrol", "sinfo", "srun", "salloc", "sacctmgr")


def trainconsole(*args: str) -> str:
    out = subprocess.run([EXE, *args], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, (args, out.stderr)
    return out.stdout


def status(run_id: str) -> str:
    return {row["id"]: row["status"] for row in json.loads(trainconsole("ls", "--json"))}[run_id]


@pytest.mark.slow
def test_a_local_run_start_to_end_calls_no_slurm_command(home: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir, calls = tmp_path / "bin", tmp_path / "slurm-calls"
    bin_dir.mkdir()
    for name in CLIENTS:
        (bin_dir / name).write_text(f'#!/bin/sh\necho "{name} $*" >> {calls}\nexit 1\n')
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{Path(sys.executable).parent}:/usr/bin:/bin")

    done = trainconsole("run", str(EXAMPLES / "digits.toml"), "--set", "train.epochs=1", "--wait")
    finished = done.strip().splitlines()[0]
    assert status(finished) == "finished"
    long = trainconsole("run", str(EXAMPLES / "digits.toml"), "--set", "train.epochs=500").strip()
    wait_for(lambda: status(long) == "running", timeout=60)
    trainconsole("ls")
    trainconsole("logs", finished)
    trainconsole("stop", long)
    assert status(long) == "stopped"
    trainconsole("resume", long)
    wait_for(lambda: status(long) == "running", timeout=60)
    trainconsole("kill", long)
    assert status(long) == "killed"
    assert (bin_dir / "sbatch").exists()  # the clients were there to be called
    assert not calls.exists(), calls.read_text()
