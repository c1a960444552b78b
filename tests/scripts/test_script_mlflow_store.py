"""An MLflow file store read exactly: each run started since the script started, each value at the step
MLflow recorded, a step's keys together (captured from real MLflow, and a script run)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from script_helpers import FIXTURES, cli, of_type

from trainconsole.trainers.scripts.mlflow_store import MlflowTail, metric_field, stores

CAPTURED = FIXTURES / "captured"
#: the run captured from MLflow 3.17.2 (its experiment's id, then the run's)
RUN = Path("160358743514792859") / "8a19c8bce3084bceb2f8397cb1c242a3"
STARTED_S = 1795595349.706  # its meta.yaml's start_time


class Collected:
    """An `emit` that keeps (kind, fields) as the runner's writer would get them."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, kind: str, **fields: Any) -> None:
        self.events.append((kind, fields))


def captured_store(tmp_path: Path) -> Path:
    store = tmp_path / "mlruns"
    shutil.copytree(CAPTURED / "mlflow_store" / "mlruns", store)
    return store


def shape(events: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, int, Any, dict[str, Any]]]:
    rest = ("step", "epoch", "source")
    return [(k, f["step"], f.get("epoch"), {n: v for n, v in f.items() if n not in rest}) for k, f in events]


#: What the captured files say (mlflow_store/mlruns/.../metrics/*), step by step: `samples` was logged
#: without a step (MLflow wrote 0, six times), train_loss at steps 1-6, epoch/val_* at 3 and 6 through
#: log_metrics, test_accuracy once at 6.
CAPTURED_EVENTS = [
    *[("step", 0, None, {"samples": 8.0 * i}) for i in range(1, 7)],
    ("step", 1, None, {"loss": 1.042074}),
    ("step", 2, None, {"loss": 0.545465}),
    ("step", 3, 0, {"loss": 0.340389}),
    ("eval", 3, 0, {"val_acc": 0.5, "val_loss": 0.9}),
    ("step", 4, 0, {"loss": 0.21216}),
    ("step", 5, 0, {"loss": 0.152054}),
    ("step", 6, 1, {"loss": 0.152696}),
    ("eval", 6, 1, {"val_acc": 0.75, "val_loss": 0.7}),
    ("result", 6, 1, {"test_acc": 0.71}),
]


def test_captured_mlflow_run_read_at_the_steps_mlflow_recorded(tmp_path: Path) -> None:
    got = Collected()
    tail = MlflowTail([captured_store(tmp_path)], STARTED_S, got)
    tail.poll()
    tail.flush()
    assert sorted(shape(got.events), key=lambda e: e[1]) == CAPTURED_EVENTS
    # and it is MLflow's own record of each key (MlflowClient.get_metric_history)
    history = json.loads((CAPTURED / "mlflow_store_history.json").read_text())
    fields = {"train_loss": "loss", "val_loss": "val_loss", "val_accuracy": "val_acc",
              "test_accuracy": "test_acc", "samples": "samples"}
    for key, field in fields.items():
        assert [[f["step"], f[field]] for _, f in got.events if field in f] == history[key], key


def test_runs_started_before_the_script_are_not_read(tmp_path: Path) -> None:
    got = Collected()
    tail = MlflowTail([captured_store(tmp_path)], STARTED_S + 5, got)
    tail.poll()
    tail.flush()
    assert got.events == []


def test_a_step_waits_for_its_keys_a_half_line_for_its_end_system_metrics_left_out(tmp_path: Path) -> None:
    store = captured_store(tmp_path)
    metrics = store / RUN / "metrics"
    shutil.rmtree(metrics)
    metrics.mkdir()
    got = Collected()
    tail = MlflowTail([store], STARTED_S, got)
    (metrics / "train_loss").write_text("1 0.5 1\n2 0.4 2\n3 0.3")  # step 3's line is being written
    (metrics / "system").mkdir()
    (metrics / "system" / "cpu_utilization_percentage").write_text("1 50.0 1\n")  # not the model's
    tail.poll()
    assert got.events == []  # steps 1 and 2 just came: more of their keys may follow
    (metrics / "epoch").write_text("2 0.0 2\n")  # epoch of step 2, one poll later
    (metrics / "train_loss").write_text("1 0.5 1\n2 0.4 2\n3 0.3 3\n")
    tail.poll()
    assert shape(got.events) == [("step", 1, None, {"loss": 0.5})]
    tail.poll()
    assert shape(got.events)[1:] == [("step", 2, 0, {"loss": 0.4}), ("step", 3, 0, {"loss": 0.3})]


def test_metric_keys_name_their_fields() -> None:
    assert [metric_field(k) for k in ("train/loss", "val/acc", "loss/val", "test/accuracy", "eval_loss",
                                      "train_accuracy", "Loss")] == [
        "loss", "val_acc", "val_loss", "test_acc", "val_loss", "acc", "loss"]


def test_stores_default_env_and_config(tmp_path: Path) -> None:
    assert stores(tmp_path, "", {}) == [tmp_path / "mlruns"]
    assert stores(tmp_path, "logs/ml", {"MLFLOW_TRACKING_URI": f"file://{tmp_path}/elsewhere"}) == [
        tmp_path / "mlruns", tmp_path / "elsewhere", tmp_path / "logs" / "ml"]
    assert stores(tmp_path, "", {"MLFLOW_TRACKING_URI": "sqlite:///mlflow.db"}) == [tmp_path / "mlruns"]


MLFLOW_LIKE_SCRIPT = """
import os, time, uuid
from pathlib import Path

run = Path("mlruns") / "0" / uuid.uuid4().hex
(run / "metrics").mkdir(parents=True)
(run / "meta.yaml").write_text(f"run_id: {run.name}\\nstart_time: {int(time.time() * 1000)}\\n")

def log(key, value, step):
    with open(run / "metrics" / key, "a") as f:
        f.write(f"{int(time.time() * 1000)} {value} {step}\\n")

for step in range(1, 7):
    log("train_loss", 1.0 / step, step)
    time.sleep(0.25)
    if step % 3 == 0:
        log("epoch", step // 3 - 1, step)
        log("val_loss", 0.5 / step, step)
log("test_loss", 0.07, 6)
"""


def test_a_script_logging_to_mlruns_is_read_as_a_run(home: Path, tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(MLFLOW_LIKE_SCRIPT)
    out = cli("run", "--script", "train.py", "--wait", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    run_id = out.stdout.split()[0]
    steps = of_type(home, run_id, "step")
    assert [(e["step"], e["loss"], e["source"]) for e in steps] == [
        (s, 1.0 / s, "mlflow") for s in range(1, 7)]
    assert [(e["step"], e["epoch"], e["val_loss"]) for e in of_type(home, run_id, "eval")] == [
        (3, 0, 0.5 / 3), (6, 1, 0.5 / 6)]
    assert [(e["step"], e["test_loss"]) for e in of_type(home, run_id, "result")] == [(6, 0.07)]
