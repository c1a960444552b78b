"""A run's samples/s is its mean over its training, the same in `ls` and `compare`, not one moment's rate.

How close two identical runs' figures are is a matter of speed (on a loaded machine two runs side by side
really train at different rates), so it is measured by benchmarks/identical_runs.py, not asserted here.
"""

from __future__ import annotations

import json
from pathlib import Path

from processes import wait_for
from test_cli import DEMO, cli, events, ls


def test_each_runs_samples_per_s_is_its_samples_over_its_training_seconds_in_ls_and_compare(
        home: Path) -> None:
    started = [cli("run", DEMO, "--set", "train.epochs=3") for _ in range(2)]
    assert all(s.returncode == 0 for s in started), [s.stderr for s in started]
    ids = [s.stdout.strip() for s in started]
    wait_for(lambda: all(ls()[i]["status"] == "finished" for i in ids), timeout=240, what="both runs' end")
    rows = ls()
    shown = [rows[i]["last"]["samples_per_s"] for i in ids]
    for run_id, rate in zip(ids, shown, strict=True):
        steps = [e for e in events(home, run_id) if e["type"] == "step"]
        trained = steps[-1]["samples"] / steps[-1]["train_s"]  # the run's samples over its training seconds
        assert abs(rate - trained) <= 0.01 * trained, (rate, trained)
    compared = cli("compare", *ids, "--json")
    assert compared.returncode == 0, compared.stderr
    assert [r["samples_per_s"] for r in json.loads(compared.stdout)["runs"]] == shown
