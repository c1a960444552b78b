"""A torchrun'd script whose rank 1 raises before its process group is up (loading its data shard): torch
prefixes a rank's traceback with `[rank1]:` only once the group is up, so the output alone does not say
whose traceback it is. The run's cause still names the rank and its exception, as the probe saw it end
that rank: in `ls --json` and `logs`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

EXE = str(Path(sys.executable).parent / "trainconsole")
pytestmark = pytest.mark.slow

SCRIPT = """
import os

import torch
import torch.distributed as dist

if os.environ["RANK"] == "1":
    raise ValueError("bad shard 7")
dist.init_process_group("gloo")
dist.all_reduce(torch.ones(1))
dist.destroy_process_group()
"""


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EXE, *args], capture_output=True, text=True, timeout=240, cwd=cwd)


def test_a_rank_that_raises_before_its_group_is_up_is_the_cause_with_its_exception(
        home: Path, tmp_path: Path) -> None:
    (tmp_path / "shards.py").write_text(SCRIPT)
    out = cli("run", "--script", "shards.py", "--nproc", "2", "--wait", cwd=tmp_path)
    assert out.returncode == 1, out.stderr[-2000:]
    run_id = out.stdout.split()[0]
    stderr = (home / "runs" / run_id / "stderr.log").read_text()
    assert "\nValueError: bad shard 7" in stderr and "[rank1]: ValueError" not in stderr  # no rank prefix
    cause = "rank 1 exited with code 1: ValueError: bad shard 7"
    row = next(r for r in json.loads(cli("ls", "--json").stdout) if r["id"] == run_id)
    assert row["status"] == "failed" and row["cause"] == cause, row
    logs = cli("logs", run_id).stdout
    failed = next(line for line in logs.splitlines() if " failed " in line)
    assert f"cause={cause} " in failed, logs
