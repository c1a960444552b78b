"""One trial, inside a Ray worker: the run's own training loop, reporting to Tune once per epoch.

The loop writes `eval` then `checkpoint` (last.pt) at each epoch's end; `TrialReport` turns that pair
into one `tune.report(metrics, checkpoint=...)`, so ASHA sees every epoch and an interrupted trial
continues from its last epoch. Ray stops a trial inside `tune.report` (it exits the trial's thread).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ray import tune

from trainconsole.protocol import trial_stops_requested
from trainconsole.protocol.rates import MeanRate
from trainconsole.protocol.tune_config import METRICS, trial_run_config

from ..strategies import ray_cluster as cluster
from ..troubles.explain import explain, traceback_tail

#: The metrics of each result that `trial` events carry (the driver adds best_val_acc).
METRIC_KEYS = tuple(METRICS)
#: How long a reused worker waits for the ended trial's thread before it gives up reusing (Ray then
#: fails the next trial with "Trainable runner reuse requires reset_config() ... return True").
RESET_WAIT_S = 600.0


class TrialThread:
    """The thread that runs this worker's trial (Ray's runner thread), kept by `train_trial`."""

    current: threading.Thread | None = None


class ReusedWorker:
    """Mixed into the trainable Ray makes of `train_trial` (`wrap_function` reads `__mixins__`):
    a reused worker resets for its next trial once the ended trial's thread has ended, however long that
    takes on a loaded host (its `finally`: the scratch folder, gc, giving memory back), not within Ray's
    `TUNE_FUNCTION_THREAD_TIMEOUT_S` (2 s unless the driver's environment says more; a cluster's workers
    do not get the driver's environment), past which Ray lost the trial."""

    def reset_config(self, new_config: dict[str, Any]) -> bool:
        done = super().reset_config(new_config)  # type: ignore[misc]  # ends the thread, waits Ray's while
        thread = TrialThread.current
        if done or thread is None:
            return bool(done)
        thread.join(RESET_WAIT_S)
        return bool(super().reset_config(new_config))  # type: ignore[misc]  # the thread has ended: reset


class TrialFailed(Exception):
    """A trial's failure as (cause, hint, traceback tail): plain strings, so it survives Ray's pickling
    (a ConfigError or a torch error may not) and the driver can show the one-line cause."""


@dataclass
class TrialFiles:
    """Where a trial's loop writes: `last/last.pt` (reported to Tune, which keeps its copy in the run's
    ray_results) and `best.pt`. Not Tune's trial folder: the driver copies that one while we write."""

    path: Path

    @property
    def last_ckpt(self) -> Path:
        return self.path / "last" / "last.pt"

    @property
    def best_ckpt(self) -> Path:
        return self.path / "best.pt"


class StopRequest:
    """The loop's stop flag in a trial: set once the console asks to stop this trial (the request file,
    looked at most once a second), so a long epoch need not end first. Tune stops trials itself (ASHA,
    a stopped search) at `tune.report`; on another node the request file is not there and the driver's
    stopper acts at the next result instead."""

    def __init__(self, run_path: str, trial_id: str) -> None:
        self.run_path, self.trial_id = run_path, trial_id
        self.next_look, self.requested = 0.0, False

    def is_set(self) -> bool:
        now = time.monotonic()
        if not self.requested and now >= self.next_look:
            self.next_look = now + 1.0
            self.requested = self.trial_id in trial_stops_requested(self.run_path)
        return self.requested


class TrialReport:
    """The loop's event sink in a trial: keeps the epoch's metrics and reports them with last.pt.

    An epoch's result is its `eval` and the last.pt saved after it, reported even when a stop came
    during that epoch's end; a stop's mid-epoch last.pt follows no `eval` and is no result.
    """

    def __init__(self, files: TrialFiles, report: Callable[..., None] | None = None,
                 start_mem: dict[str, int] | None = None) -> None:
        self.files, self.began = files, time.monotonic()
        self.start_mem = start_mem or {}  # the worker's memory before this trial's model (see bridge)
        self.report = report or tune.report
        self.metrics: dict[str, Any] = {}
        self.mem: dict[str, Any] = {}
        self.evaluated = False  # an `eval` not yet reported
        self.samples_per_s: float | None = None
        self.rate = MeanRate()
        self.node = cluster.node_name()

    def emit(self, kind: str, **fields: Any) -> None:
        """Take one loop event; a `checkpoint` of last.pt after an `eval` ends the epoch and reports it."""
        if kind == "step":
            self.metrics["train_loss"] = fields.get("loss")
            self.mem = fields.get("mem") or self.mem
            self.rate.add(fields)
            self.samples_per_s = self.rate.value  # the trial's mean, as a run's (protocol.rates)
        elif kind == "eval":
            self.metrics.update(epoch=fields.get("epoch"), val_loss=fields.get("val_loss"),
                                val_acc=fields.get("val_acc"))
            self.evaluated = True
        elif kind == "checkpoint" and not fields.get("is_best") and self.evaluated:
            self.evaluated = False
            checkpoint = tune.Checkpoint.from_directory(str(self.files.last_ckpt.parent))
            own = {"mem": self.mem, "pid": os.getpid(), "node": self.node,
                   "samples_per_s": self.samples_per_s, "train_s": time.monotonic() - self.began,
                   "start_mem": self.start_mem}
            self.report({**self.metrics, **own}, checkpoint=checkpoint)


def train_trial(sampled: dict[str, Any], tune_config: dict[str, Any], run_path: str) -> None:
    """Ray's trainable: train `tune_config`'s run config with the sampled values in place."""
    config, failure = None, None
    TrialThread.current = threading.current_thread()
    trial_id = tune.get_context().get_trial_id()
    files = TrialFiles(scratch_dir(run_path, trial_id))
    try:
        config = trial_run_config(tune_config, sampled)
        train_config(config, tune_config, files, StopRequest(run_path, trial_id))
    except Exception as exc:  # noqa: BLE001 - Tune records the trial as ERROR with this cause
        why = explain(exc, config)
        failure = TrialFailed(why.cause, why.hint, traceback_tail(exc))
    finally:
        shutil.rmtree(files.path, ignore_errors=True)
        if "torch" in sys.modules:  # a reused worker runs the next trial: this one's memory goes back
            from ..troubles import memory_cap

            memory_cap.give_back()
    if failure is not None:  # raised outside `except`: no chained exception that might not unpickle
        raise failure


train_trial.__mixins__ = (ReusedWorker,)  # type: ignore[attr-defined]


def scratch_dir(run_path: str, trial_id: str) -> Path:
    """`<run>/trials/<id>` on the run's own host; a temp dir on another node of a Ray cluster."""
    if os.path.isdir(run_path):
        return Path(run_path) / "trials" / trial_id
    return Path(tempfile.mkdtemp(prefix=f"trainconsole-{trial_id}-"))


def train_config(config: dict[str, Any], tune_config: dict[str, Any], files: TrialFiles,
                 stop: StopRequest) -> None:
    """Train one trial's run config in this worker, reporting each epoch to Tune."""
    config = trial_settings(config, tune_config)
    files.last_ckpt.parent.mkdir(parents=True, exist_ok=True)
    from ..builtin import batch_finder, loop
    from ..troubles import memory_cap

    memory_cap.lift()  # a reused worker: the previous trial's cap and CUDA cache go with it
    # Its clock starts after the imports (train_s is the trial's own time), its memory before the model.
    report = TrialReport(files, start_mem=memory_cap.held())
    resume = resume_from(files)
    config = batch_finder.resolve(config, resume)  # batch_size = "auto": this trial's model and device
    loop.train(loop.make_strategy(config), config, files, report, stop, resume)


def trial_settings(config: dict[str, Any], tune_config: dict[str, Any]) -> dict[str, Any]:
    """What a trial's run config gets from its share of the machine: one torch thread per reserved CPU
    (trials don't fight for cores), and no GPU unless it reserved one (Ray does not hide the GPUs from a
    trial that reserved none, and every such trial would train on cuda:0 without Ray knowing)."""
    share = tune_config["tune"]
    train, strategy = dict(config["train"]), dict(config["strategy"])
    if not train["threads"]:
        train["threads"] = max(1, int(share["cpus_per_trial"]))
    if not share["gpus_per_trial"]:
        strategy["accelerator"] = "cpu"
    return {**config, "train": train, "strategy": strategy}


def resume_from(files: TrialFiles) -> str | None:
    """The last.pt of Tune's latest checkpoint of this trial (a restored or retried trial), or None."""
    checkpoint = tune.get_checkpoint()
    if checkpoint is None:
        return None
    target = files.path / "resume.pt"
    with checkpoint.as_directory() as folder:
        shutil.copyfile(os.path.join(folder, "last.pt"), target)
    return str(target)
