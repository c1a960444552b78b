"""An ended search's row from the run index is the row its log gives (the trials and the best trial's
metric), so a home of many searches opens without reading their logs; a summary made before summaries
had a search's metric is not used (its log is read, as before)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from trainconsole.console.core.board import rank, row
from trainconsole.console.core.run_state import RunState, summarized
from trainconsole.control import runs
from trainconsole.protocol import EventWriter, RunDir, index

T0 = 1_700_000_000.0
OLD = time.time() - 3600


def search(home: Path, run_id: str, metric: str, mode: str, results: dict[str, list[float]],
           final: str = "finished") -> RunDir:
    (home / "runs").mkdir(parents=True, exist_ok=True)
    run = RunDir.create(home, run_id)
    run.config.write_text('[tune]\nnum_samples = 3\n')
    run.write_info({"id": run_id, "name": "digits-search", "kind": "tune", "strategy": "single",
                    "host": "box", "pid": None, "pid_started": None, "started_at": T0, "ended_at": T0 + 60})
    log = EventWriter(run.events, run_id)
    log.emit("started", strategy="single", search="random", num_samples=3, metric=metric, mode=mode)
    for epoch in range(2):
        for trial, values in results.items():
            log.emit("trial", trial_id=trial, number=int(trial[-1]), status="running", epoch=epoch + 1,
                     config={"lr": 0.01}, metrics={metric: values[epoch], "val_acc": values[epoch]})
    if final == "finished":
        pick = max if mode == "max" else min
        best = pick(results, key=lambda t: pick(results[t]))
        log.emit("finished", best_trial=best, metric=metric, best_value=0.0, best_val_acc=None, val_acc=None)
    else:
        log.emit(final)
    log.close()
    for path in (run.events, run.path, run.checkpoints):
        os.utime(path, (OLD, OLD))
    return run


def from_log(run: RunDir) -> RunState:
    state = RunState(run.id)
    for line in run.events.read_text().splitlines():
        state.apply(json.loads(line))
    info = run.read_info()
    state.set_info(info, run.epochs(info))
    state.alive = False
    return state


@pytest.mark.parametrize(("metric", "mode", "final"), [("val_acc", "max", "finished"),
                                                       ("val_loss", "min", "finished"),
                                                       ("val_acc", "max", "stopped")])
def test_an_ended_search_s_row_from_the_index_is_its_log_s_row(tmp_path: Path, metric: str, mode: str,
                                                               final: str) -> None:
    home = tmp_path / "home"
    values = {"t1": [0.5, 0.7], "t2": [0.6, 0.4], "t3": [0.2, 0.3]}
    run = search(home, "20240101-000000-search-0001", metric, mode, values, final)
    [summary] = index.summaries(home, runs.status)
    state = summarized(run.id, summary.row, summary.facts)
    assert state is not None and state.summarized and state.search is None  # its log unread
    logged = from_log(run)
    assert row(state, T0 + 100) == row(logged, T0 + 100)
    assert row(state, T0 + 100)[3] == "3 tr"
    assert state.best_val_acc == logged.best_val_acc
    other = RunState("20240101-000000-train-0002", best_val_acc=0.65, started_at=T0)
    assert [r.id for r in rank([state, other], "best")] == [r.id for r in rank([logged, other], "best")]


def test_a_search_summary_without_its_metric_is_read_from_the_log(tmp_path: Path) -> None:
    home = tmp_path / "home"
    run = search(home, "20240101-000000-search-0001", "val_acc", "max", {"t1": [0.5, 0.7]})
    [summary] = index.summaries(home, runs.status)
    facts = {k: v for k, v in summary.facts.items() if k != "metric"}  # as an older index wrote it
    assert summarized(run.id, summary.row, facts) is None
    assert summarized(run.id, summary.row, summary.facts) is not None
