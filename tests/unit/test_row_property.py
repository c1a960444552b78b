"""Any event log gives one row: folded whole as the console folds it live, and through the run index's
summary of it (a tail and the whole log's lines that outlast it), as the console takes an ended run's."""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from row_paths import both

from trainconsole.protocol import RunDir

T0 = 1_700_000_000.0
OLD = T0 + 10_000  # every file's mtime: settled long ago
num = st.one_of(st.floats(0.0, 10.0, allow_nan=False), st.integers(0, 9), st.just(math.nan))
started = st.fixed_dictionaries(
    {"type": st.just("started"), "strategy": st.sampled_from(["single", "ddp", ""])},
    optional={"world_size": st.integers(1, 4), "epochs": st.integers(1, 9)})
step = st.fixed_dictionaries({"type": st.just("step"), "step": st.integers(0, 999)}, optional={
    "epoch": st.integers(0, 9), "loss": num, "Loss_D": num, "lr": num, "samples_per_s": num,
    "samples": st.integers(0, 10_000), "train_s": num, "epochs": st.integers(1, 9)})
evals = st.fixed_dictionaries({"type": st.just("eval")}, optional={
    "epoch": st.integers(0, 9), "step": st.integers(0, 999), "val_loss": num, "val_acc": num})
warning = st.fixed_dictionaries({"type": st.just("warning"), "message": st.just("disk"),
                                 "code": st.sampled_from(["disk_full", "disk_space_back", "nan_loss"])})
final = st.one_of(
    st.fixed_dictionaries({"type": st.just("finished")}, optional={"best_val_acc": num}),
    st.fixed_dictionaries({"type": st.sampled_from(["failed", "stopped", "killed"]), "cause": st.just("x")}))
#: a log: what it said, its steps of filler (more than a tail's 64 KiB, so only its tail is read), and
#: what it said after, then its final word
logs = st.tuples(st.lists(st.one_of(started, step, evals, warning, final), max_size=12),
                 st.sampled_from([0, 3, 1200]),
                 st.lists(st.one_of(started, step, evals, warning), max_size=6), final)


def write(path: Path, said: list[dict], filler: int, after: list[dict], end: dict) -> RunDir:
    """A script run whose log says `said`, `filler` steps, `after` and `end`; its run.json, launched
    before all of it."""
    run = RunDir(path)
    run.path.mkdir(parents=True)
    filled = [{"type": "step", "step": i, "epoch": 1, "loss": 1 / (i + 1), "samples_per_s": 100 + i % 7,
               "note": "x" * 40} for i in range(filler)]
    events = [{"type": "started", "strategy": "single"}, *said, *filled, *after, end]
    lines = [json.dumps({"v": 1, "t": T0 + i, "run": path.name, **e}) for i, e in enumerate(events)]
    run.events.write_text("\n".join(lines) + "\n")
    run.write_info({"id": path.name, "name": "r", "kind": "script", "strategy": "single", "pid": None,
                    "started_at": T0 - 1, "ended_at": T0 + len(events), "ran_s": 10.0})  # resumed once
    for p in (run.events, run.path):
        os.utime(p, (OLD, OLD))
    return run


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(log=logs)
def test_any_log_gives_one_row_through_the_index_and_through_the_console(tmp_path: Path, log: tuple) -> None:
    said, filler, after, end = log
    path = Path(tempfile.mkdtemp(dir=tmp_path)) / "runs/20240101-000000-r-0001"  # one run per example
    write(path, said, filler, after, end)
    pair = both(path, now=T0 + 99_999)
    assert pair is not None
    assert pair[0] == pair[1]
