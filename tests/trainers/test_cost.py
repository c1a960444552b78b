"""A run records its own cost (trainconsole/trainers/builtin/cost.py): wall time and the peak memory of its
whole
process tree,
in its final event and in periodic `cost` events."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from trainer_runs import events, make_config, make_run, train

from trainconsole.trainers.builtin import cost


class Log:
    """An emitter that keeps the events."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def emit(self, kind: str, **fields: Any) -> None:
        self.events.append((kind, fields))


def test_the_cost_counts_child_processes_and_is_written_periodically_and_at_the_end(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cost, "COST_EVERY_S", 0.6)
    monkeypatch.setattr(cost, "SAMPLE_S", 0.1)
    hold = "import time; b = b'x' * (300 << 20); print(1, flush=True); time.sleep(60)"  # 300 MB, touched
    child = subprocess.Popen([sys.executable, "-c", hold], stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline()  # it holds them now
        log = Log()
        meter = cost.CostMeter(log, run_dir=None)
        meter.emit("started")
        deadline = time.monotonic() + 30
        while not any(kind == "cost" for kind, _ in log.events):
            assert time.monotonic() < deadline, "no periodic cost event"
            time.sleep(0.05)
        meter.emit("stopped", step=3)
    finally:
        child.kill()
        child.wait()
    kind, final = log.events[-1]
    assert kind == "stopped" and final["step"] == 3
    me = psutil.Process().memory_info().rss
    assert final["cost"]["host_peak"] > me + (250 << 20)  # this process and its child, summed
    assert final["cost"]["wall_s"] > 0 and final["cost"]["gpu_hours"] is None  # no GPU here
    meter.stop()
    assert [k for k, _ in log.events].count("stopped") == 1 and log.events[-1][0] == "stopped"  # none after


@pytest.mark.slow
def test_a_ddp_run_charges_every_rank_to_itself(tc_home: Path) -> None:
    run = make_run(tc_home, make_config(train={"epochs": 1}, strategy={"name": "ddp", "devices": 2}))
    assert train(run, timeout=300) == 0, run.stderr.read_text()
    finished = events(run, "finished")[0]
    ranks = [r["rss"] for r in events(run, "step")[-1]["mem"]["ranks"]]
    assert len(ranks) == 2
    assert finished["cost"]["host_peak"] >= sum(ranks)  # both ranks (and the launcher), not rank 0 alone
    assert 0 < finished["cost"]["wall_s"] < 300 and events(run)[-1]["type"] == "finished"
