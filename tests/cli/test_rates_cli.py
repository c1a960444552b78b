"""Two identical runs show the same samples/s: each run's mean over its training, not one moment's rate."""

from __future__ import annotations

import json
from pathlib import Path

from processes import wait_for
from test_cli import DEMO, cli, events, ls


def test_two_identical_runs_started_together_show_mean_rates_within_a_quarter(home: Path) -> None:
    started = [cli("run", DEMO, "--set", "train.epochs=3") for _ in range(2)]  # side by side: the same load
    assert all(s.returncode == 0 for s in started), [s.stderr for s in started]
    ids = [s.stdout.strip() for s in started]
    wait_for(lambda: all(ls()[i]["status"] == "finished" for i in ids), timeout=240, what="both runs' end")
    rows = ls()
    shown = [rows[i]["last"]["samples_per_s"] for i in ids]
    assert max(shown) <= 1.25 * min(shown), shown
    for run_id, rate in zip(ids, shown, strict=True):
        steps = [e for e in events(home, run_id) if e["type"] == "step"]
        trained = steps[-1]["samples"] / steps[-1]["train_s"]  # the run's samples over its training seconds
        assert abs(rate - trained) <= 0.01 * trained, (rate, trained)
        moments = [e["samples_per_s"] for e in steps]
        assert max(moments) > 1.25 * min(moments)  # (its moments differ: one of them would not do)
    compared = cli("compare", *ids, "--json")
    assert compared.returncode == 0, compared.stderr
    assert [r["samples_per_s"] for r in json.loads(compared.stdout)["runs"]] == shown
