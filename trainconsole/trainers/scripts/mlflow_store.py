"""An MLflow file store (`mlruns/`), read exactly as it grows (stdlib only; MLflow is not needed).

`mlflow.log_metric(key, value, step)` against a file store appends `timestamp value step` (or `timestamp
value step dataset digest`) to `<store>/<experiment>/<run>/metrics/<key>` (a key with `/` is a folder
path). Stores: `mlruns/` in the directory the script runs in (MLflow's file store default), a `file:` or
path `MLFLOW_TRACKING_URI` in the script's environment, and `[script] mlruns`; only runs started since
the script started count (`start_time` in the run's meta.yaml). Values of one run at one step are one
event: training metrics a `step` event (`train_loss`, `train/loss` -> `loss`), `val_*` / `eval_*` an
`eval` event, `test_*` a `result` event, an `epoch` metric the events' epoch; `system/*` metrics (CPU,
GPU usage) are left out. A step's event waits for a poll that adds nothing to it, so that keys written
one after the other land together. A key logged without a step is at step 0, as MLflow records it (each
value its own event: none is lost).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainconsole.protocol.events import EVAL, RESULT, STEP

from .file_tail import FileTail, Listings, complete_lines, read_from, signature
from .names import kind, name

SOURCE = "mlflow"
DEFAULT_STORE = "mlruns"
START_TIME = re.compile(rb"^start_time: *(\d+)", re.MULTILINE)
EVAL_PARTS = ("val", "valid", "validation", "eval", "dev")
TRAIN_PARTS = ("train", "training")
SKIP_PREFIX = "system/"
EVENTS = {"metric": STEP, "val": EVAL, "test": RESULT}


def metric_field(key: str) -> str:
    """The event field for an MLflow metric key: `train/loss` -> loss, `val/acc` and `acc/val` -> val_acc."""
    parts = [p for p in key.lower().split("/") if p]
    if len(parts) < 2:
        return name(key)
    prefix = "test_" if "test" in parts else "val_" if any(p in EVAL_PARTS for p in parts) else ""
    rest = [p for p in parts if p not in EVAL_PARTS + TRAIN_PARTS + ("test",)] or parts
    key = name("_".join(rest))
    return key if not prefix or key.startswith(prefix) else prefix + key


def step_events(step: int, values: dict[str, float], epoch: int | float | None) -> list[tuple[str, dict]]:
    """The events of one run's values at one step (EPOCH: the epoch then, if no value says it): (kind,
    fields), in the order they are written."""
    grouped: dict[str, dict[str, Any]] = {}
    timing: dict[str, float] = {}
    epoch = epoch_of(values, epoch)
    for key, value in values.items():
        field_name = metric_field(key)
        where_to = kind(field_name)
        if where_to == "timing":
            timing[field_name] = value
        elif where_to in EVENTS:
            grouped.setdefault(EVENTS[where_to], {})[field_name] = value
    where = {"step": step, **({"epoch": epoch} if epoch is not None else {})}
    events = [(k, {**where, **grouped[k], "source": SOURCE}) for k in (STEP, EVAL, RESULT) if k in grouped]
    if events and timing:
        events[0][1]["timing"] = timing
    return events


def epoch_of(values: dict[str, float], epoch: int | float | None) -> int | float | None:
    """The epoch an `epoch` metric among VALUES says, else EPOCH."""
    for key, value in values.items():
        if kind(metric_field(key)) == "epoch":
            return int(value) if value == int(value) else value
    return epoch


@dataclass
class MetricFile:
    """How far one metric file was read: the byte offset after its last whole line."""

    offset: int = 0
    seen: tuple[int, float] | None = None

    def read(self, path: Path) -> list[tuple[int, float]]:
        """The (step, value) pairs appended since the last read."""
        lines, used = complete_lines(read_from(path, self.offset))
        self.offset += used
        found = []
        for line in lines:
            parts = line.split()
            try:
                found.append((int(parts[2]) if len(parts) >= 3 else 0, float(parts[1])))
            except (IndexError, ValueError):
                continue
        return found


@dataclass
class StoreRun:
    """One MLflow run: its metric files, and the values of steps that may still grow."""

    files: dict[str, MetricFile] = field(default_factory=dict)
    #: per step, the values read (a key's second value at a step starts a record of its own)
    waiting: dict[int, list[dict[str, float]]] = field(default_factory=dict)
    epoch: int | float | None = None

    def read(self, metrics: Path, listings: Listings) -> set[int]:
        """Read what each metric file grew by into `waiting`; the steps that got values."""
        touched: set[int] = set()
        for path in map(Path, listings.files(str(metrics))):
            key = path.relative_to(metrics).as_posix()
            if key.startswith(SKIP_PREFIX):
                continue
            state = self.files.setdefault(key, MetricFile())
            seen = signature(path)
            if seen is None or seen == state.seen:
                continue  # unchanged: one stat
            state.seen = seen
            for step, value in state.read(path):
                records = self.waiting.setdefault(step, [{}])
                if key in records[-1]:
                    records.append({})
                records[-1][key] = value
                touched.add(step)
        return touched

    def ready(self, touched: set[int] | None) -> list[tuple[str, dict]]:
        """The events of the waiting steps that this poll did not touch (all of them if TOUCHED is None)."""
        events = []
        for step in sorted(s for s in self.waiting if touched is None or s not in touched):
            for values in self.waiting.pop(step):
                self.epoch = epoch_of(values, self.epoch)
                events += step_events(step, values, self.epoch)
        return events


class MlflowTail(FileTail):
    """Polls the stores for runs started since SINCE and emits their new metrics, until `finish()`."""

    def __init__(self, stores: list[Path], since: float, emit: Callable[..., Any]) -> None:
        super().__init__("mlflow-tail")
        self.stores, self.since, self.emit = stores, since, emit
        self.runs: dict[Path, StoreRun | None] = {}  # None: a run from before the script started
        self.listings = Listings()

    def poll(self) -> None:
        """Read every run's metric files and emit the steps that are complete."""
        self._find_runs()
        for path, run in self.runs.items():
            if run is not None:
                self._emit(run.ready(run.read(path / "metrics", self.listings)))

    def flush(self) -> None:
        """The script ended: every waiting step is complete."""
        for run in self.runs.values():
            if run is not None:
                self._emit(run.ready(None))

    def _emit(self, events: list[tuple[str, dict]]) -> None:
        for event, fields in events:
            self.emit(event, **fields)

    def _dirs(self, folder: Path) -> list[Path]:
        """FOLDER's sub-folders but `.trash`."""
        dirs = self.listings.entries(str(folder))[0]
        return [Path(d) for d in dirs if not os.path.basename(d).startswith(".")]

    def _find_runs(self) -> None:
        for store in self.stores:
            for experiment in self._dirs(store):
                for run in self._dirs(experiment):
                    if run not in self.runs:
                        started = _start_time(run / "meta.yaml")
                        if started is not None:
                            self.runs[run] = StoreRun() if started / 1000 >= self.since - 1.0 else None


def stores(cwd: Path, configured: str, environ: dict[str, str]) -> list[Path]:
    """Where to look for MLflow file stores: `mlruns/`, a file `MLFLOW_TRACKING_URI`, `[script] mlruns`."""
    found = [cwd / DEFAULT_STORE] + [cwd / p for p in (_uri_path(environ.get("MLFLOW_TRACKING_URI", "")),
                                                        configured) if p]
    return list(dict.fromkeys(p.resolve() for p in found))


def _uri_path(uri: str) -> str:
    """The folder of a file store's tracking URI (`file:///abs`, `file:rel`, a plain path); "" for others
    (`sqlite:///mlflow.db`, `http://...`, `databricks`)."""
    if uri.startswith("file:"):
        return uri.removeprefix("file:").removeprefix("//")
    return "" if ":" in uri or uri == "databricks" else uri


def _start_time(meta: Path) -> int | None:
    """A run's `start_time` (ms) from its meta.yaml, None until it is written."""
    match = START_TIME.search(read_from(meta, 0))
    return int(match[1]) if match else None
