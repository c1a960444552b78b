"""A script run's row as `ls` and the console fold it (`RunRow`), from a real probed script run: its
samples/s the mean over its steps, its final loss the last step's own (identical seeded runs, identical
cells), and its config only what it has (no built-in trainer defaults: `lr<0.03` matches the measured lr)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from processes import wait_for
from script_helpers import EXE, FIXTURES

from trainconsole.protocol.run_row import RunRow

TRAIN = FIXTURES / "probe" / "probe_train.py"
ENDS = ("finished", "failed", "stopped", "killed")
RUNS = 3

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple[str, list[Any], Any]]]:
    """Three identical seeded runs at once: (home, [(id, events, the script's own counters)])."""
    root = tmp_path_factory.mktemp("rows")
    env = {**os.environ, "TRAINCONSOLE_HOME": str(root / "home")}
    ids = []
    for i in range(RUNS):
        out = subprocess.run([EXE, "run", "--script", str(TRAIN), "--", "--epochs", "2", "--counters",
                              str(root / f"{i}.json")], env=env, capture_output=True, text=True, timeout=120,
                             check=True)
        ids.append(out.stdout.split()[0])
    return root / "home", [(run_id, ended(root / "home" / "runs" / run_id / "events.jsonl"),
                            json.loads((root / f"{i}.json").read_text())) for i, run_id in enumerate(ids)]


def ended(path: Path) -> list[dict[str, Any]]:
    wait_for(lambda: path.exists() and any(f'"type":"{k}"' in path.read_text() for k in ENDS), timeout=240,
             what=f"{path.parent.name} to end")
    return [json.loads(line) for line in path.read_text().splitlines()]


def folded(events: list[dict[str, Any]]) -> RunRow:
    row = RunRow()
    for event in events:
        row.apply(event)
    return row


def test_the_final_loss_is_the_last_steps_own(runs: tuple[Path, list[Any]]) -> None:
    _, done = runs
    losses = [folded(events).loss for _, events, _ in done]
    assert losses == [pytest.approx(own["losses"][-1]) for _, _, own in done]
    assert len(set(losses)) == 1  # identical seeded runs show identical cells


def test_samples_per_s_is_the_mean_over_the_steps(runs: tuple[Path, list[Any]]) -> None:
    _, done = runs
    for _, events, own in done:
        probed = [e for e in events if e["type"] == "step" and e.get("source") == "probe"]
        # 100 samples in batches of 16 (the last of 4) twice: every sample after the first batch
        assert own["batches"] == 7 and probed[-1]["samples"] == 2 * 100 - 16
        row = folded(events)
        assert row.samples_per_s == pytest.approx(probed[-1]["samples"] / probed[-1]["train_s"])


def test_a_script_runs_config_holds_only_what_it_has(runs: tuple[Path, list[Any]]) -> None:
    home, done = runs
    config = (home / "runs" / done[0][0] / "config.toml").read_text()
    assert "[script]" in config and not {"[train]", "[model]", "[data]"} & set(config.splitlines())
    out = subprocess.run([EXE, "ls", "--json", "--filter", "lr<0.03"], capture_output=True, text=True,
                         env={**os.environ, "TRAINCONSOLE_HOME": str(home)}, check=True)
    assert done[0][2]["lrs"][-1] == 0.025  # the measured lr; the trainer's default (0.05) is no script's
    assert sorted(r["id"] for r in json.loads(out.stdout)) == sorted(run_id for run_id, _, _ in done)
