"""What `resume` takes: a finished run has nothing left to resume (exit 2, nothing rewritten) unless asked
for more epochs; then it trains on from its last checkpoint to the new total."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from processes import wait_for
from test_cli import DEMO, cli, events, ls

from trainconsole.console.core.run_state import RunState


def test_a_finished_run_is_refused_and_resume_epochs_trains_on(home: Path) -> None:
    out = cli("run", DEMO, "--set", "train.epochs=1", "--wait")
    assert out.returncode == 0, out.stderr
    run_id = out.stdout.split()[0]
    run_json = home / "runs" / run_id / "run.json"
    before, logged = run_json.read_text(), events(home, run_id)

    refused = cli("resume", run_id)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert refused.stderr.strip().splitlines() == [
        f"trainconsole: error: run {run_id} has finished: nothing left to resume "
        "(resume ID --epochs N to train on)"]
    assert run_json.read_text() == before and events(home, run_id) == logged  # nothing rewritten

    same = cli("resume", run_id, "--epochs", "1")
    assert same.returncode == 2 and "not more than the 1 epochs" in same.stderr
    assert run_json.read_text() == before

    assert cli("resume", run_id, "--epochs", "2").returncode == 0
    wait_for(lambda: ls()[run_id]["status"] == "finished" and events(home, run_id)[-1]["type"] == "finished"
             and len(events(home, run_id)) > len(logged), timeout=120, what="the resumed run's end")
    after = events(home, run_id)[len(logged):]
    assert after[0]["type"] == "started" and after[0]["resumed_from_step"] == logged[-1]["steps"]
    assert [e["epoch"] for e in after if e["type"] == "eval"] == [2]
    assert after[-1]["epochs"] == 2 and after[-1]["steps"] == 2 * logged[-1]["steps"]
    assert "epochs = 2" in (home / "runs" / run_id / "config.toml").read_text()
    line = next(ln for ln in cli("ls").stdout.splitlines() if ln.startswith(run_id))
    assert " 2/2 " in line  # the epoch and the total, as the console's row shows them
    info = json.loads(run_json.read_text())
    assert info["id"] == run_id

    # its time goes on from where it was: the wall time and elapsed are the whole run's, not the resume's
    first, whole = logged[-1]["cost"]["wall_s"], after[-1]["cost"]["wall_s"]
    second = after[-1]["t"] - after[0]["t"]
    assert whole >= first + second, (first, second, whole)
    assert info["ran_s"] >= first - 0.001  # (wall_s is rounded to ms)
    state = RunState(run_id)  # the console's row (compare shows `cost.wall_s`, checked beside it elsewhere)
    state.set_info(info)
    for event in events(home, run_id):
        state.apply(event)
    assert state.elapsed(now=time.time()) == pytest.approx(whole, abs=2.0)
