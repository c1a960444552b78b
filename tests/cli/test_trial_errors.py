"""A trial Ray puts in ERROR without calling the callbacks' `on_trial_error` (a worker it could not reuse:
"Trainable runner reuse requires reset_config() ...") is said as any error: an `error` trial event with
Ray's words, and `trials ID` shows it `error` with that cause (it read `pending` in a finished search)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from trainconsole.protocol import RunDir, read_all
from trainconsole.trainers.tune import bridge

EXE = str(Path(sys.executable).parent / "trainconsole")
SEARCH = "20240305-131500-tune-digits-5e5e"
TUNE = {"max_t": 1, "scheduler": "none", "space": {"train.lr": {"uniform": [0.01, 0.1]}}}
RAY_SAID = "Trainable runner reuse requires reset_config() to be implemented and return True."


def search(home: Path) -> RunDir:
    (home / "runs").mkdir(parents=True, exist_ok=True)
    run = RunDir.create(home, SEARCH)
    run.config.write_text(Path("examples/tune_digits_random_asha.toml").read_text())
    run.write_info({"id": SEARCH, "name": "tune-digits", "kind": "tune", "started_at": 1_709_640_000.0,
                    "ended_at": 1_709_640_060.0, "pid": None})
    run.events.write_text(json.dumps({"v": 1, "t": 1_709_640_000.0, "run": SEARCH, "type": "started",
                                      "strategy": "tune", "metric": "val_acc", "mode": "max"}) + "\n")
    return run


def errored_trial(folder: Path) -> SimpleNamespace:
    """A trial as Ray leaves it after a failed reuse: ERROR, its error.txt written as Trial.handle_error
    writes one (no pickled error: the exception is Ray's own)."""
    folder.mkdir(parents=True)
    error = folder / "error.txt"
    error.write_text(f"Failure # 1 (occurred at 2026-11-28_04-00-00)\n{RAY_SAID}\n")
    return SimpleNamespace(trial_id="ab12_00002", config={"train.lr": 0.05}, status="ERROR",
                           last_result={}, metric_analysis={}, error_file=str(error), pickled_error_file=None)


def test_a_trial_errored_by_ray_itself_shows_error_and_its_cause_in_trials(home: Path) -> None:
    run = search(home)
    events = bridge.TrialEvents(run.path, SEARCH, TUNE)
    ok = SimpleNamespace(trial_id="ab12_00001", config={"train.lr": 0.02}, status="TERMINATED",
                         last_result={"training_iteration": 1, "val_acc": 0.9}, metric_analysis={})
    lost = errored_trial(run.path / "ray_results" / "t2")
    events.on_trial_result(0, [ok, lost], ok, {"training_iteration": 1, "val_acc": 0.9})
    events.on_trial_complete(0, [ok, lost], ok)
    events.on_step_end(0, [ok, lost])
    events.on_experiment_end([ok, lost])  # said once, not again
    said = [e for e in read_all(run.events) if e.get("trial_id") == "ab12_00002"]
    assert [(e["status"], e["cause"]) for e in said] == [("error", RAY_SAID)], said
    assert "reuse_actors" in said[0]["hint"]

    out = subprocess.run([EXE, "trials", SEARCH], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if "#2" in line)
    assert " error " in lines[at] and "pending" not in lines[at], out.stdout
    assert lines[at + 1].split() == ["error:", *RAY_SAID.split()], out.stdout  # its cause, under it
