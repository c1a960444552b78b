"""The compare view's pure core: what differs, each run's facts and cost, curves on steps or wall time."""

from __future__ import annotations

from trainconsole.console.core.compare import (
    MISSING,
    compare,
    curves,
    fact_rows,
    flatten,
    text,
    to_json,
    to_wall,
)
from trainconsole.console.core.history import Series
from trainconsole.console.core.run_state import RunState

T0 = 1_709_633_700.0


def run(run_id: str, accs: list[float], cost: dict | None = None, final: str = "finished") -> RunState:
    state = RunState(run_id)
    state.set_info({"name": "cnn", "started_at": T0})
    state.apply({"t": T0, "type": "started", "strategy": "single"})
    for i, acc in enumerate(accs, start=1):
        state.apply({"t": T0 + 10 * i, "type": "step", "step": 100 * i, "epoch": i, "loss": 1 / i,
                     "samples_per_s": 1000.0 + i, "mem": {"devices": [], "rss": 500 << 20}})
        state.apply({"t": T0 + 10 * i, "type": "eval", "epoch": i, "step": 100 * i, "val_loss": 2 - acc,
                     "val_acc": acc})
    state.apply({"t": T0 + 10 * len(accs) + 1, "type": final, **({"cost": cost} if cost else {})})
    return state


COST = {"wall_s": 31.5, "host_peak": 3 << 30, "gpu_peak": {"0": 5 << 30, "1": 4 << 30}, "gpu_hours": 0.0175,
        "energy_j": 12000.0}


def test_only_the_keys_that_differ_unless_all_and_every_runs_facts() -> None:
    a = {"train": {"lr": 0.1, "batch_size": 64, "epochs": 3}, "model": {"name": "small_cnn"}}
    b = {"train": {"lr": 0.05, "batch_size": 64, "epochs": 3}, "model": {"name": "small_cnn"},
         "tune": {"space": {"train.lr": {"kind": "loguniform"}}}}
    c = compare([run("r-a", [0.5, 0.9, 0.8], COST), run("r-b", [0.6, 0.7])], [a, b], now=T0 + 1000)
    assert c.differs == ["train.lr", "tune.space.train.lr.kind"]
    assert c.values["tune.space.train.lr.kind"][0] is MISSING
    assert c.keys(all_keys=True)[:3] == ["train.lr", "train.batch_size", "train.epochs"]
    first, second = c.runs
    assert (first.best_val_acc, first.final_val_acc, first.epochs) == (0.9, 0.8, 3)
    assert first.best_val_loss == 2 - 0.9 and first.final_val_loss == 2 - 0.8
    assert (first.wall_s, first.host_peak, first.energy_j) == (31.5, 3 << 30, 12000.0)
    assert first.gpu_peak == COST["gpu_peak"]
    assert first.color != second.color and first.status == "finished"
    # A run without a cost record (an older run): its own wall time and its last step's memory.
    assert (second.wall_s, second.host_peak, second.gpu_hours) == (21.0, 500 << 20, None)
    report = to_json(c)
    assert report["differs"]["train.lr"] == {"r-a": 0.1, "r-b": 0.05}
    assert report["differs"]["tune.space.train.lr.kind"] == {"r-a": None, "r-b": "loguniform"}
    assert report["runs"][0]["mem"] == {"host": 3 << 30, "gpus": COST["gpu_peak"]}
    assert set(to_json(c, all_keys=True)["differs"]) == set(c.values)
    names = [name for name, _ in fact_rows(c)]
    assert "energy" in names and dict(fact_rows(c))["wall time"] == ["31s", "21s"]
    assert "train.lr" in text(report) and "3G" in text(report)


def test_without_a_gpu_no_gpu_rows_and_a_failed_run_keeps_its_last_cost_event() -> None:
    failed = run("r-f", [0.5], final="failed")
    failed.apply({"t": T0 + 5, "type": "cost", "cost": {**COST, "gpu_peak": {}, "gpu_hours": None,
                                                          "energy_j": None, "wall_s": 5.0}})
    c = compare([failed, run("r-b", [0.6])], [{}, {}], now=T0)
    assert "energy" not in dict(fact_rows(c)) and c.differs == []
    assert c.runs[0].status == "failed" and c.runs[0].wall_s == 5.0 and c.runs[0].host_peak == 3 << 30


def test_flatten_and_curves_on_wall_time() -> None:
    assert flatten({"a": {"b": 1, "c": {"d": [1, 2]}}, "e": {}}) == {"a.b": 1, "a.c.d": [1, 2], "e": {}}
    times = Series()
    for step, t in ((10, 1.0), (20, 3.0), (40, 4.0)):
        times.append(step, t)
    assert to_wall([5, 10, 15, 30, 40, 50], times) == [1.0, 1.0, 2.0, 3.5, 4.0, 4.0]
    r = run("r-a", [0.5, 0.9])
    on_steps = {(line.kind, tuple(line.xs)) for line in curves([r], "step", 50)}
    on_time = {(line.kind, tuple(line.xs)) for line in curves([r], "wall time", 50)}
    assert ("train", (100.0, 200.0)) in on_steps and ("train", (10.0, 20.0)) in on_time
