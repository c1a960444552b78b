"""`trainconsole trials ID`: a finished random search ranked, and the hyperparameter that drives the metric
found above one that cannot matter (real Ray, real trials on digits, driven through the CLI)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

EXE = str(Path(sys.executable).parent / "trainconsole")


def cli(*args: str, timeout: float = 400) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EXE, *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_importance_ranks_the_learning_rate_above_a_key_that_cannot_matter(home: Path) -> None:
    # lr over 4 decades decides val_acc after one epoch; histogram_every only decides when histograms are
    # written: its true importance is 0.
    sets = ["tune.num_samples=10", "tune.max_t=1", 'tune.scheduler="none"', "tune.seed=3",
            "tune.space.train.lr={loguniform=[1e-5, 0.3]}",
            "tune.space.train.histogram_every={choice=[1, 2, 3]}",
            "tune.space.train.batch_size={choice=[64]}", "tune.space.train.momentum={choice=[0.9]}"]
    args = [a for s in sets for a in ("--set", s)]
    out = cli("tune", "examples/tune_digits_random_asha.toml", *args, "--wait")
    assert out.returncode == 0, out.stderr
    run_id = out.stdout.split()[0]
    report = json.loads(cli("trials", run_id, "--json").stdout)
    assert report["metric"] == "val_acc" and len(report["trials"]) == 10
    best = [t["best"] for t in report["trials"]]
    assert best == sorted(best, reverse=True) and report["best_trial"] == report["trials"][0]["trial_id"]
    scores = {row["key"].rsplit(".", 1)[-1]: row["score"] for row in report["importance"]}
    assert scores["lr"] > scores["histogram_every"] and scores["lr"] > 0.6, scores
    bars = cli("trials", run_id).stdout.split("importance for val_acc")[1]
    assert bars.index("lr ") < bars.index("histogram_every")
    refused = cli("trials", "nope")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "id:" in refused.stderr
