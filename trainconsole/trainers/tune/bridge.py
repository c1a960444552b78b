"""The driver's side of the trials: a `trial` event per result and per status change, and the stopper
that stops one trial when the console asks (`RUN_DIR/stop_trials/<trial_id>`, see protocol.trial_requests).

Tune pickles callbacks and stoppers with the experiment: they hold paths, never open files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ray.cloudpickle as cloudpickle
from ray import tune

from trainconsole.protocol import Event, EventWriter, read_all, trial_stops_requested
from trainconsole.protocol.tune_config import plain, short_names

from ..troubles.explain import one_line
from . import handover, stopping
from .trial import METRIC_KEYS

#: Ray's trial statuses in trial events (TERMINATED is refined by `ended_status`).
STATUS = {"PENDING": "pending", "RUNNING": "running", "PAUSED": "paused", "TERMINATED": "terminated",
          "ERROR": "error"}


class TrialStopper(tune.Stopper):
    """Stops exactly the trials the console asked to stop, at their next result."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir

    def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
        return trial_id in trial_stops_requested(self.run_dir)

    def stop_all(self) -> bool:
        return False


class TrialEvents(tune.Callback):
    """Appends `trial` events to the tune run's log: pending, running (each result), and how it ended."""

    def __init__(self, run_dir: Path, run_id: str, tune_cfg: dict[str, Any]) -> None:
        self.run_dir, self.run_id = run_dir, run_id
        self.max_t, self.asha = tune_cfg["max_t"], tune_cfg["scheduler"] == "asha"
        self.names = short_names(list(tune_cfg["space"]))
        self.seen: dict[str, str] = {}  # trial id → the last status written
        self.handover = handover.Handover()  # did an ended trial give its worker's memory back?
        self._writer: EventWriter | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_writer": None}

    def setup(self, **info: Any) -> None:
        stopping.forward_to_tune()  # a SIGTERM that came while Tune was starting

    def on_step_end(self, iteration: int, trials: list[Any], **info: Any) -> None:
        for trial in trials:
            if trial.trial_id not in self.seen and trial.status == "PENDING":
                self.write(trials, trial, "pending")
        self.say_errors(trials)

    def on_experiment_end(self, trials: list[Any], **info: Any) -> None:
        self.say_errors(trials)

    def say_errors(self, trials: list[Any]) -> None:
        """An `error` event for each trial Ray put in ERROR without calling `on_trial_error` (a worker it
        could not reuse for it: the trial read `pending` in a finished search, its cause on stderr only)."""
        for trial in trials:
            if trial.status == "ERROR" and self.seen.get(trial.trial_id) != "error":
                self.on_trial_error(0, trials, trial)

    def on_trial_start(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        self.write(trials, trial, "running")

    def on_trial_result(self, iteration: int, trials: list[Any], trial: Any, result: dict[str, Any],
                        **info: Any) -> None:
        self.write(trials, trial, "running", result)
        kept = self.handover.result(trial.trial_id, _number(trials, trial), result)
        if kept is not None:
            self.writer().emit("warning", trial_id=trial.trial_id, **kept)

    def on_trial_complete(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        status = self.ended_status(trial)
        self.write(trials, trial, status)
        self.handover.end(trial.trial_id, status)

    def on_trial_error(self, iteration: int, trials: list[Any], trial: Any, **info: Any) -> None:
        cause, hint = error_cause(trial)
        self.write(trials, trial, "error", cause=cause, hint=hint)
        self.handover.end(trial.trial_id, "error")

    def ended_status(self, trial: Any) -> str:
        """terminated (trained all its epochs), stopped (the console asked), or stopped_early (ASHA cut
        it: it reported fewer epochs than it had; one epoch is one iteration)."""
        if trial.trial_id in trial_stops_requested(self.run_dir):
            return "stopped"
        epochs = (trial.config or {}).get("train.epochs", self.max_t)
        reached = (trial.last_result or {}).get("training_iteration") or 0
        return "stopped_early" if self.asha and reached < epochs else "terminated"

    def write(self, trials: list[Any], trial: Any, status: str, result: dict[str, Any] | None = None,
              **extra: Any) -> None:
        """One `trial` event: id, number (1..n), searched values (short names), status, iteration,
        metrics, memory (the worker's) and time_s (the trial's own time so far: set-up and epochs, not
        the worker's start or imports)."""
        result = result if result is not None else (trial.last_result or {})
        fields = {
            "trial_id": trial.trial_id, "number": _number(trials, trial), "status": status,
            "config": {self.names.get(k, k): plain(k, v) for k, v in (trial.config or {}).items()},
            "iteration": int(result.get("training_iteration") or 0),
            "metrics": metrics(trial, result),
            "mem": result.get("mem") or {}, "time_s": _seconds(result.get("train_s")),
            **{k: result[k] for k in ("node", "pid", "samples_per_s") if result.get(k)}, **extra,
        }
        self.seen[trial.trial_id] = status
        self.writer().emit("trial", **fields)

    def writer(self) -> EventWriter:
        if self._writer is None:
            self._writer = EventWriter(self.run_dir / "events.jsonl", self.run_id)
        return self._writer


def metrics(trial: Any, result: dict[str, Any]) -> dict[str, Any]:
    """The result's metrics, and the best val_acc over the trial's whole life (a resumed trial's too:
    Tune keeps its metric analysis with the experiment; it is updated after the callbacks run)."""
    out = {k: result[k] for k in METRIC_KEYS if isinstance(result.get(k), (int, float))}
    seen = ((trial.metric_analysis or {}).get("val_acc") or {}).get("max")
    best = [v for v in (out.get("val_acc"), seen) if isinstance(v, (int, float))]
    if best:
        out["best_val_acc"] = max(best)
    return out


def mark_unfinished_stopped(events: EventWriter) -> None:
    """After a stop of the whole search: a `stopped` trial event for each trial still pending or running
    in the log (a resume continues them)."""
    mark_unfinished(events, "stopped")


def mark_unfinished(events: EventWriter, status: str, **extra: Any) -> None:
    """A trial event with `status` (and `extra`: an error's cause and hint) for each trial still pending
    or running in the log."""
    last: dict[str, Event] = {}
    for event in read_all(events.path):
        if event.get("type") == "trial" and event.get("trial_id"):
            last[event["trial_id"]] = event
    for event in last.values():
        if event.get("status") in ("pending", "running", "paused"):
            fields = {k: v for k, v in event.items() if k not in ("v", "t", "run", "type")}
            events.emit("trial", **{**fields, "status": status, **extra})


def _seconds(value: Any) -> float | None:
    return round(float(value), 3) if isinstance(value, (int, float)) else None


def _number(trials: list[Any], trial: Any) -> int:
    for i, t in enumerate(trials):
        if t is trial or t.trial_id == trial.trial_id:
            return i + 1
    return 0


def error_cause(trial: Any) -> tuple[str, str]:
    """The trial's failure as (one-line cause, hint)."""
    try:  # the driver's local copy: the one in storage is written later
        with open(trial.pickled_error_file, "rb") as f:
            error = cloudpickle.load(f)
    except Exception:  # noqa: BLE001 - a missing or unreadable error file still gets a line
        error = None
    said = last_words(trial.error_file) if error is None else ""
    return (said, REUSE_HINT if "reset_config" in said else "") if said else cause_of(error)


#: What to do when Ray could not reuse a worker for a trial (its thread outlived the reset's wait).
REUSE_HINT = "Ray could not reuse a worker for this trial; tune.reuse_actors = false starts a fresh one each"


def last_words(error_file: str | None) -> str:
    """The last error Ray wrote to a trial's error.txt (`Failure # N (occurred at ...)`, then its words),
    for an error it did not pickle (one of its own, not the trial's); '' if there is none."""
    try:
        with open(error_file or "", encoding="utf-8", errors="replace") as f:
            lines = [line.strip() for line in f if line.strip()]
    except OSError:
        return ""
    words = [line for line in lines if not line.startswith("Failure # ")]
    return words[-1] if words else ""


def cause_of(error: BaseException | None) -> tuple[str, str]:
    """(one-line cause, hint) of Ray's wrapped exception (`TrialFailed` from trial.py when it can)."""
    cause = getattr(error, "cause", None) or error
    if type(cause).__name__ == "TrialFailed" and len(cause.args) >= 2:
        return str(cause.args[0]), str(cause.args[1])
    if cause is None:
        return "the trial failed (see error.txt in its folder under ray_results)", ""
    return one_line(cause), ""
