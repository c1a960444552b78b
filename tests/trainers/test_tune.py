"""Tune runs end to end: real Ray, real trials on digits, driven through the CLI as a user would.

The searches are the examples made tiny with --set (few trials, 1-2 epochs), so every searcher runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from processes import gone, wait_for

from trainconsole.control import runs
from trainconsole.protocol import RunDir, request_trial_stop
from trainconsole.protocol.tune_config import load_tune, short_names, trial_run_config

EXE = str(Path(sys.executable).parent / "trainconsole")
pytestmark = pytest.mark.slow


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EXE, *args], capture_output=True, text=True, timeout=timeout)


def tune(example: str, *sets: str, wait: bool = True) -> tuple[str, subprocess.CompletedProcess[str]]:
    args = [a for s in sets for a in ("--set", s)]
    out = cli("tune", f"examples/{example}", *args, *(["--wait"] if wait else []))
    return out.stdout.strip().splitlines()[0] if out.stdout.strip() else "", out


def logged(run_id: str) -> list[dict[str, Any]]:
    """The run's events through `logs --json`, as a user would read them."""
    out = cli("logs", run_id, "--json", timeout=60)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def trials(events: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """trial id → its trial events, oldest first."""
    out: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        if event["type"] == "trial":
            out.setdefault(event["trial_id"], []).append(event)
    return out


def events_of(home: Path, run_id: str) -> list[dict[str, Any]]:
    path = home / "runs" / run_id / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def iterations(home: Path, run_id: str) -> dict[str, int]:
    """trial id → the latest iteration it reported."""
    return {tid: evs[-1]["iteration"] for tid, evs in trials(events_of(home, run_id)).items()}


def test_random_asha_search_reports_every_trial_a_failing_one_is_error_and_best_config_trains(
        home: Path) -> None:
    # A grid of two num_classes under random search: 4 classes cannot hold digits' labels 0-9.
    run_id, out = tune("tune_digits_random_asha.toml", "tune.num_samples=1", "tune.max_t=2",
                       "tune.space.model.num_classes={grid=[10, 4]}")
    assert out.returncode == 0, out.stderr
    assert "trial #" in out.stderr and " error @0" in out.stderr  # --wait shows how each trial ended
    events = logged(run_id)
    by_trial = trials(events)
    assert len(by_trial) == 2
    finals = {tid: evs[-1] for tid, evs in by_trial.items()}
    bad = next(e for e in finals.values() if e["config"]["num_classes"] == 4)
    good = next(e for e in finals.values() if e["config"]["num_classes"] == 10)
    why = bad["cause"] + " " + bad["hint"]  # e.g. "Target 9 is out of bounds" and a num_classes hint
    assert bad["status"] == "error" and "\n" not in bad["cause"], bad
    assert "label" in why.lower() or "out of bounds" in why, bad
    assert "num_classes" in why, bad
    assert good["status"] in ("terminated", "stopped_early") and good["metrics"]["val_acc"] > 0.1
    assert any(e["metrics"] and e["status"] == "running" for e in by_trial[good["trial_id"]])
    assert set(good["config"]) == {"lr", "batch_size", "momentum", "num_classes"}
    assert good["mem"]["rss"] > 0
    finished = events[-1]
    assert finished["type"] == "finished" and finished["best_trial"] == good["trial_id"]
    assert finished["errors"] == 1 and finished["trials"] == 2
    row = next(r for r in json.loads(cli("ls", "--json").stdout) if r["id"] == run_id)
    assert row["kind"] == "tune" and row["status"] == "finished"

    # `t`: the best trial's config as a normal run, which trains.
    search = load_tune(RunDir(home / "runs" / run_id).config)
    best = runs.launch(trial_run_config(search, finished["best_config"]), name="best")
    assert runs.wait(best) == "finished"
    evals = [e for e in events_of(home, best.id) if e["type"] == "eval"]
    assert len(evals) == 2 and evals[-1]["val_acc"] > 0.1


def test_a_search_whose_every_trial_fails_is_failed_with_the_first_cause(home: Path) -> None:
    run_id, out = tune("tune_digits_random_asha.toml", "tune.num_samples=1", "tune.max_t=1",
                       "tune.space.model.num_classes={grid=[3]}")
    assert out.returncode == 1, out.stderr
    final = logged(run_id)[-1]
    assert final["type"] == "failed" and final["errors"] == 1, final
    assert final["cause"].startswith("no trial reported a result; first error: ") and "num_classes" in (
        final["cause"] + final["hint"]), final
    row = next(r for r in json.loads(cli("ls", "--json").stdout) if r["id"] == run_id)
    assert row["status"] == "failed" and row["strategy"] == "tune:random"


@pytest.mark.parametrize(
    ("example", "sets"),
    [
        # batch_size = "auto": each trial finds its batch before training (else its loop would fail)
        ("tune_digits_grid.toml",
         ["tune.space.train.lr={grid=[0.05]}", "tune.max_t=1", 'train.batch_size="auto"']),
        ("tune_digits_optuna.toml", ["tune.num_samples=2", "tune.max_t=1"]),
        ("tune_digits_hyperopt.toml", ["tune.num_samples=2", "tune.max_t=1"]),
        ("tune_digits_bayesopt.toml", ["tune.num_samples=2", "tune.max_t=1"]),
    ],
)
def test_each_searcher_finishes_with_every_trial_reported(home: Path, example: str, sets: list[str]) -> None:
    run_id, out = tune(example, *sets)
    assert out.returncode == 0, out.stderr
    events = logged(run_id)
    config = load_tune(Path("examples") / example, sets)
    metric, names = config["tune"]["metric"], set(short_names(list(config["tune"]["space"])).values())
    by_trial = trials(events)
    assert len(by_trial) == 2
    for evs in by_trial.values():
        assert evs[-1]["status"] == "terminated", evs[-1]
        assert any(metric in e["metrics"] for e in evs) and set(evs[-1]["config"]) == names
    assert [e["number"] for e in (evs[-1] for evs in by_trial.values())] in ([1, 2], [2, 1])
    assert events[-1]["type"] == "finished" and events[-1]["best_trial"] in by_trial


@pytest.mark.parametrize(("model", "warned"), [("model_families:hoarder", True), ("small_cnn", False)])
def test_a_trial_that_keeps_its_memory_in_a_reused_worker_is_warned_about(
        home: Path, monkeypatch: pytest.MonkeyPatch, model: str, warned: bool) -> None:
    # Three trials one after the other in one Ray worker (its first is not judged: it grows the worker
    # once, by imports); `hoarder` keeps 400 MB in a module-level list each time.
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parent))
    run_id, out = tune("tune_digits_random_asha.toml", "tune.num_samples=3", "tune.max_t=1",
                       "tune.max_concurrent=1", "tune.scheduler='none'", f"model.name='{model}'")
    assert out.returncode == 0, out.stderr
    events = logged(run_id)
    results = [e for evs in trials(events).values() for e in evs if e["status"] == "running" and e["metrics"]]
    assert len({e["trial_id"] for e in results}) == 3 and len({e["pid"] for e in results}) == 1  # reused
    kept = [e for e in events if e["type"] == "warning" and e.get("code") == "trial_memory_kept"]
    if warned:
        assert len(kept) == 1 and kept[0]["number"] == 2 and kept[0]["next_number"] == 3, kept
        assert 380 << 20 <= kept[0]["kept_rss"] < 600 << 20 and "did not give its memory back" in \
            kept[0]["message"] and "reuse_actors" in kept[0]["hint"], kept
    else:  # the worker gave the first trial's memory back (gc and malloc_trim), no false alarm
        assert kept == []


def tree(pid: int) -> dict[int, str]:
    """A process and all its descendants: pid → name."""
    root = psutil.Process(pid)
    return {p.pid: p.name() for p in [root, *root.children(recursive=True)]}


LOOPBACK = ("127.0.0.1", "::ffff:127.0.0.1", "::1")


def listening(pids: dict[int, str]) -> list[str]:
    """The addresses these processes listen on (TCP)."""
    found = []
    for pid in pids:
        try:
            conns = psutil.Process(pid).net_connections(kind="inet")
        except psutil.Error:
            continue
        found += [c.laddr.ip for c in conns if c.status == psutil.CONN_LISTEN]
    return found


def test_stopping_one_trial_leaves_the_others_and_kill_leaves_no_ray_process(home: Path) -> None:
    run_id, out = tune("tune_digits_random_asha.toml", "tune.num_samples=2", "tune.max_t=300",
                       "tune.scheduler='none'", "data.num_workers=1", wait=False)
    assert out.returncode == 0, out.stderr
    both = wait_for(lambda: len([i for i in iterations(home, run_id).values() if i >= 1]) == 2 and
                    iterations(home, run_id), 180, "two trials reporting")
    victim, other = sorted(both)
    request_trial_stop(RunDir(home / "runs" / run_id), victim)
    wait_for(lambda: trials(events_of(home, run_id))[victim][-1]["status"] == "stopped", 60, "trial stop")
    stopped_at = iterations(home, run_id)
    wait_for(lambda: iterations(home, run_id)[other] >= stopped_at[other] + 2, 60, "other trial going on")
    assert iterations(home, run_id)[victim] == stopped_at[victim]  # it reports nothing more
    assert trials(events_of(home, run_id))[other][-1]["status"] == "running"

    info = json.loads((home / "runs" / run_id / "run.json").read_text())
    before = tree(info["pid"])
    names = " ".join(before.values())
    assert "raylet" in names and "gcs_server" in names and "ray::" in names, before
    assert listening(before) and all(ip in LOOPBACK for ip in listening(before)), listening(before)
    began = time.monotonic()
    killed = cli("kill", run_id, timeout=60)
    assert killed.returncode == 0, killed.stderr
    wait_for(lambda: gone(list(before)), 10, "every process of the tune run gone")
    assert time.monotonic() - began < 10
    assert [p.pid for p in psutil.process_iter() if _in_session(p, info["pid"])] == []
    row = next(r for r in json.loads(cli("ls", "--json").stdout) if r["id"] == run_id)
    assert row["status"] == "killed"
    link = info.get("ray_temp_dir", "")
    if link.startswith(tempfile.gettempdir() + "/tcray-"):  # Ray was handed a short link to <run>/ray
        assert not os.path.lexists(link)  # the kill removed it
    # The killed search agrees with itself: no trial still `running`, its best trial's val_acc in ls
    report = json.loads(cli("trials", run_id, "--json").stdout)
    assert {t["status"] for t in report["trials"]} <= {"killed", "stopped", "terminated"}, report["trials"]
    best = next(t["best"] for t in report["trials"] if t["trial_id"] == report["best_trial"])
    assert row["last"]["val_acc"] == best


def _in_session(proc: psutil.Process, sid: int) -> bool:
    """A live process of the run's session (the run is started as a session leader; Ray's processes and
    the trials' DataLoader workers stay in it), whenever it was started."""
    try:
        return os.getsid(proc.pid) == sid and proc.status() != psutil.STATUS_ZOMBIE
    except (OSError, psutil.Error):
        return False


def test_stop_ends_the_search_gracefully_and_resume_continues_it_to_the_end(home: Path) -> None:
    run_id, out = tune("tune_digits_random_asha.toml", "tune.num_samples=3", "tune.max_t=3",
                       "tune.scheduler='none'", "tune.max_concurrent=1", wait=False)
    assert out.returncode == 0, out.stderr
    wait_for(lambda: any(i >= 1 for i in iterations(home, run_id).values()), 180, "a first result")
    stopped = cli("stop", run_id, timeout=120)
    assert stopped.returncode == 0 and stopped.stdout.split()[-1] == "stopped", stopped.stderr
    before = trials(events_of(home, run_id))
    assert {evs[-1]["status"] for evs in before.values()} <= {"stopped", "terminated"}

    seen = len(events_of(home, run_id))
    resumed = cli("resume", run_id, timeout=60)
    assert resumed.returncode == 0, resumed.stderr
    ended = ("finished", "failed", "stopped", "killed")
    wait_for(lambda: any(e["type"] in ended for e in events_of(home, run_id)[seen:]), 300, "the end")
    events = events_of(home, run_id)
    assert [e["type"] for e in events[seen:] if e["type"] != "trial"][:1] == ["started"]
    assert events[-1]["type"] == "finished", events[-1]
    after = trials(events)
    assert set(before) <= set(after) and len(after) == 3
    # Each trial ends at iteration 3 = max_t: a trial cut by the stop went on from its last epoch's
    # checkpoint (had it started over, Tune's count would have gone past 3).
    assert all(evs[-1]["status"] == "terminated" and evs[-1]["iteration"] == 3 for evs in after.values())
