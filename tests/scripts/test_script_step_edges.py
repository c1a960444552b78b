"""Where steps were still miscounted: a `report()` step written half way, progress counters printed on
lines of their own or around `tqdm.write`, and the first part of a long line (dropped, or cut between a key
and its value)."""

from __future__ import annotations

from pathlib import Path

from script_helpers import cli, of_type

REPORT_SCRIPT = """
import time
from trainers import report

for i in range(1, 401):
    report(loss=float(i))  # a step in two calls: an event due now must not split them
    report(lr=0.5)
    time.sleep(0.001)
"""


def run_script(home: Path, tmp_path: Path, source: str) -> str:
    """Run SOURCE as a script to its end; the run's id."""
    (tmp_path / "train.py").write_text(source)
    out = cli("run", "--script", "train.py", "--wait", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()[0]


def test_report_writes_a_step_whole_never_half_in_each_of_two_events(home: Path, tmp_path: Path) -> None:
    steps = of_type(home, run_script(home, tmp_path, REPORT_SCRIPT), "step")
    assert 2 < len(steps) < 400 and sum(e["count"] for e in steps) == 400
    covered = 0
    for event in steps:  # each event: whole steps covered+1..step, both metrics of each
        reported = range(covered + 1, event["step"] + 1)
        assert event["count"] == len(reported) > 0, (event, covered)
        assert event["loss"] == sum(reported) / len(reported) and event["lr"] == 0.5, event
        covered = event["step"]
    assert covered == 400
