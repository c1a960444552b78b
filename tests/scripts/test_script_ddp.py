"""A torchrun-style DDP script (gloo, DataLoader workers) under `--nproc 2`: kill and stop take everything."""

from __future__ import annotations

from pathlib import Path

import pytest
from processes import wait_for
from script_helpers import FIXTURES, alive, cli, of_type, start, status, tree

DDP = FIXTURES / "ddp_train.py"

pytestmark = pytest.mark.slow


def start_ddp(home: Path, tmp_path: Path, *script_args: str) -> tuple[str, list]:
    """A running `--nproc 2` run with 2 DataLoader workers per rank; its process tree once it trains."""
    run_id = start("--script", str(DDP), "--nproc", "2", "--", "--workers", "2", *script_args, cwd=tmp_path)
    wait_for(lambda: of_type(home, run_id, "step"), what="a printed step")
    procs = tree(home, run_id)
    assert len(procs) >= 1 + 1 + 2 + 4  # runner, torchrun's agent, 2 ranks, 2 workers each
    return run_id, procs


def test_kill_leaves_no_process_and_the_run_is_killed(home: Path, tmp_path: Path) -> None:
    run_id, procs = start_ddp(home, tmp_path)
    out = cli("kill", run_id)
    assert out.returncode == 0, out.stderr  # kill waits at most 3 s for every process to be gone
    assert alive(procs) == []
    assert status(run_id) == "killed"


def test_stop_ends_stopped_when_the_script_handles_sigterm(home: Path, tmp_path: Path) -> None:
    run_id, procs = start_ddp(home, tmp_path, "--on-sigterm", "stop")
    out = cli("stop", run_id, "--grace", "60")
    assert out.returncode == 0, out.stderr
    assert status(run_id) == "stopped"
    assert "stopped cleanly" in (home / "runs" / run_id / "stdout.log").read_text()
    wait_for(lambda: not alive(procs), timeout=10, what="every process to exit")


def test_stop_kills_after_the_grace_period_if_the_script_ignores_sigterm(home: Path, tmp_path: Path) -> None:
    run_id, procs = start_ddp(home, tmp_path, "--on-sigterm", "ignore")
    out = cli("stop", run_id, "--grace", "2")
    assert out.returncode == 0, out.stderr
    assert status(run_id) == "killed"
    assert alive(procs) == []
    assert not of_type(home, run_id, "stopped")
