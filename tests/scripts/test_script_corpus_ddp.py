"""A real 2-rank torchrun script whose every rank prints `Rank r, Epoch e, Batch b, Loss x` (as DDP
tutorials do): one step event per printed (epoch, batch), with rank 0's values; and when a rank fails, the
run's cause names it, its exit code and its exception (torchrun's "Root Cause" block)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from processes import wait_for
from script_helpers import FIXTURES, of_type, start

SCRIPT = FIXTURES / "corpus" / "torchrun_ranks.py"
PRINTED = re.compile(r"^Rank (\d+), Epoch (\d+), Batch (\d+), Loss (\S+)$", re.MULTILINE)

pytestmark = pytest.mark.slow


def ended(home: Path, run_id: str) -> bool:
    return bool(of_type(home, run_id, "finished") or of_type(home, run_id, "failed"))


def test_ranks_lines_give_one_step_per_printed_step_and_a_failed_rank_is_the_cause(
        home: Path, tmp_path: Path) -> None:
    # --no-measure: the ranks' printed lines as the text readers place them (the probe: test_script_probe.py)
    ok = start("--script", str(SCRIPT), "--nproc", "2", "--no-measure", cwd=tmp_path)
    bad = start("--script", str(SCRIPT), "--nproc", "2", "--no-measure", "--", "--fail-rank", "1",
                cwd=tmp_path)
    wait_for(lambda: ended(home, ok) and ended(home, bad), timeout=180, what="both runs to end")
    printed = PRINTED.findall((home / "runs" / ok / "stdout.log").read_text())
    assert {rank for rank, *_ in printed} == {"0", "1"} and len(printed) == 8  # 2 ranks x 2 epochs x 2
    steps = of_type(home, ok, "step")
    # batches 0 and 2 of an epoch of 4 (guessed from the printed counts: 0, 2, then 2 more)
    rank0 = [(int(e) * 4 + int(b), int(e), float(loss)) for r, e, b, loss in printed if r == "0"]
    assert [(s["step"], s["epoch"], s["loss"]) for s in steps] == rank0
    assert all(s["rank"] == 0 for s in steps)
    failed = of_type(home, bad, "failed")[0]
    assert failed["cause"] == "rank 1 exited with code 1: ValueError: a bad batch on rank 1", failed
    assert 'raise ValueError(f"a bad batch on rank {rank}")' in failed["traceback"]
    assert "\x1b" not in failed["cause"] + failed["hint"] + failed["traceback"]
