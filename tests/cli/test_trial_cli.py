"""`stop-trial` and `train-trial`: the CLI's twins of `x` and `t` on a search's trials, through `Control`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from processes import wait_for

from trainconsole import protocol
from trainconsole.protocol import RunDir

EXE = str(Path(sys.executable).parent / "trainconsole")
SEARCH = "20240305-131500-tune-digits-5e5e"
T0 = 1_709_640_000.0


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EXE, *args], capture_output=True, text=True, timeout=timeout)


def trial(n: int, status: str, acc: float, lr: float, bs: int) -> dict[str, Any]:
    return {"t": T0 + n, "type": "trial", "trial_id": f"ab12_0000{n}", "number": n, "status": status,
            "iteration": 1, "config": {"lr": lr, "batch_size": bs}, "metrics": {"val_acc": acc}}


def ended_search(home: Path) -> RunDir:
    """A search that ended (its log as a driver writes it): trial #2 the best; one epoch a trial."""
    (home / "runs").mkdir(parents=True, exist_ok=True)
    run = RunDir.create(home, SEARCH)
    run.config.write_text(Path("examples/tune_digits_random_asha.toml").read_text().replace(
        "max_t = 8", "max_t = 1"))
    run.write_info({"id": SEARCH, "name": "tune-digits", "kind": "tune", "strategy": "single",
                    "started_at": T0, "ended_at": T0 + 60, "pid": None})
    events = [{"t": T0, "type": "started", "strategy": "tune", "metric": "val_acc", "mode": "max"},
              trial(1, "terminated", 0.71, 0.031, 64), trial(2, "terminated", 0.95, 0.0874, 32),
              {"t": T0 + 60, "type": "finished", "best_trial": "ab12_00002"}]
    run.events.write_text("".join(json.dumps({"v": 1, "run": SEARCH, **e}) + "\n" for e in events))
    return run


def test_train_trial_trains_the_best_trials_config_to_the_end(home: Path) -> None:
    ended_search(home)
    out = cli("train-trial", SEARCH[-4:], "--wait")
    assert out.returncode == 0, out.stderr
    assert "training trial #2" in out.stderr
    run = RunDir(home / "runs" / out.stdout.split()[0])
    config = protocol.load(run.config)
    assert (config["train"]["lr"], config["train"]["batch_size"]) == (0.0874, 32) and "tune" not in config
    assert run.read_info()["kind"] == "train" and run.read_info()["name"] == "tune-digits-trial2"
    evals = [e for e in protocol.read_all(run.events) if e["type"] == "eval"]
    assert len(evals) == 1 and evals[0]["val_acc"] > 0.3  # it trained: digits, the search's max_t epochs


def test_a_trial_by_number_or_id_and_bad_names_are_one_line(home: Path) -> None:
    ended_search(home)
    for name in ("9", "#9", "ab12_00009"):
        out = cli("stop-trial", SEARCH, name)
        assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
        assert out.stderr.startswith("trainconsole: error: trial: ") and "#1, #2" in out.stderr
    out = cli("stop-trial", "nothing-like-it", "1")
    assert out.returncode == 2 and "error: id: no run matches" in out.stderr
    assert not protocol.trial_stops_requested(home / "runs" / SEARCH)
    for name in ("#1", "ab12_00001"):  # named right, but its search has finished: nothing to stop
        out = cli("stop-trial", SEARCH, name)
        assert out.returncode == 2 and "is finished" in out.stderr, out.stderr
    assert not protocol.trial_stops_requested(home / "runs" / SEARCH)


def test_trial_commands_on_a_run_that_is_no_search_name_the_id(home: Path, tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("print('loss: 0.5')\n")
    run_id = cli("run", "--script", str(script), "--wait").stdout.split()[0]
    for command in ("stop-trial", "train-trial"):
        out = cli(command, run_id, "1")
        assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
        assert f"error: id: {run_id} is not a search" in out.stderr


def iterations(home: Path, run_id: str) -> dict[str, tuple[int, int, str]]:
    """trial id -> (its number, latest iteration, status)."""
    path, out = home / "runs" / run_id / "events.jsonl", {}
    for line in path.read_text().splitlines() if path.exists() else []:
        event = json.loads(line)
        if event["type"] == "trial":
            out[event["trial_id"]] = (event["number"], event["iteration"], event["status"])
    return out


@pytest.mark.slow
def test_stop_trial_stops_one_trial_of_a_real_search_and_the_other_goes_on(home: Path) -> None:
    out = cli("tune", "examples/tune_digits_random_asha.toml", "--set", "tune.num_samples=2", "--set",
              "tune.max_t=300", "--set", "tune.scheduler='none'", "--set", "data.num_workers=1")
    run_id = out.stdout.split()[0]
    try:
        both = wait_for(lambda: len([t for t in iterations(home, run_id).values() if t[1] >= 1]) == 2 and
                        iterations(home, run_id), 180, "two trials reporting")
        (victim, (number, _, _)), (other, _) = sorted(both.items())
        stopped = cli("stop-trial", run_id[-6:], f"#{number}")
        assert stopped.returncode == 0 and f"asked trial #{number}" in stopped.stdout, stopped.stderr
        wait_for(lambda: iterations(home, run_id)[victim][2] == "stopped", 60, "the trial's stop")
        at = iterations(home, run_id)
        wait_for(lambda: iterations(home, run_id)[other][1] >= at[other][1] + 1, 60, "the other going on")
        assert iterations(home, run_id)[victim][1] == at[victim][1]  # it reports nothing more
        assert iterations(home, run_id)[other][2] == "running"
    finally:
        assert cli("kill", run_id, timeout=60).returncode == 0
