"""The search, from `ray.init` to its final event: build (or restore) the Tuner, fit, report the best.

Ray's experiment state lives in `<run>/ray_results/search`, so `--resume` continues the same search with
`Tuner.restore` (unfinished trials go on from their last epoch's checkpoint).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

from ray import tune

from trainconsole.protocol import Config, EventWriter, RunDir
from trainconsole.protocol.tune_config import plain, short_names

from .. import entry
from ..slurm.ray_nodes import ENV_ADDRESS
from . import bridge, cluster_watch, pending, session, space, stopping
from .trial import train_trial

EXPERIMENT = "search"
#: How long a reused worker waits for the previous trial's thread to end before Ray gives up reusing it.
THREAD_WAIT_S = 60


def run_search(run: RunDir, config: Config, events: EventWriter, resume: bool) -> str:
    """Run (or resume) the search; emit `started`, then `finished`, `stopped` or `failed`; return it."""
    tune_cfg = config["tune"]
    address = tune_cfg["ray_address"] or os.environ.get(ENV_ADDRESS, "")  # (a Slurm job's own Ray)
    started = time.monotonic()
    # A reused worker waits this long for the previous trial's thread to end (Ray's default: 2 s, which a
    # loaded host outlasts; the next trial then failed to start). A local Ray's workers inherit it.
    os.environ.setdefault("TUNE_FUNCTION_THREAD_TIMEOUT_S", str(THREAD_WAIT_S))
    temp = session.start(run.path, tune_cfg, address)
    ending = Ending(events)
    watch = cluster_watch.ClusterWatch(address, ending.give_up).start() if address else None
    try:
        with run.lock():  # `ls` shows the search in the strategy column
            run.update_info(ray_temp_dir=str(temp) if temp else None, ray_address=address or "local",
                            strategy=f"tune:{tune_cfg['search']}")
        events.emit("started", **started_fields(config, temp, time.monotonic() - started, resume))
        if stopping.requested():  # SIGTERM during ray.init: nothing ran yet
            events.emit("stopped", trials=0)
            return "stopped"
        grid = build_tuner(run, config, resume, events).fit()
        for _ in range(pending.RESTARTS):  # trials stuck pending: the saved search on a fresh Ray
            if not pending.stuck() or stopping.requested():
                break
            pending.clear()
            session.stop(temp)
            temp = session.start(run.path, tune_cfg, address)
            events.emit("warning", code="search_restarted", message="the search goes on, on a fresh Ray")
            grid = build_tuner(run, config, True, events).fit()
        if watch is not None and watch.cause:  # the cluster went away: Tune's loop was ended for it
            return ending.cluster_gone(watch.cause)
        return report_end(grid, tune_cfg, events)
    except Exception:
        if watch is not None and watch.cause:  # what Tune raised came of the gone cluster
            return ending.cluster_gone(watch.cause)
        raise
    finally:  # (with its cluster gone, Ray's shutdown would wait for it: the watch ends the process)
        if watch is None or not watch.cause:
            session.stop(temp)
            if watch is not None:
                watch.close()


class Ending:
    """The search's end when its cluster went away, written once: by the driver once Tune's loop has
    ended, or by the cluster watch when the driver is stuck in Ray (it then ends the process)."""

    def __init__(self, events: EventWriter) -> None:
        self.events, self.lock, self.said = events, threading.Lock(), False

    def cluster_gone(self, cause: str) -> str:
        """Its trials still pending or running are `error`, the search `failed`, in Ray's words."""
        with self.lock:
            if not self.said:
                self.said = True
                said = cluster_watch.fields(cause)
                bridge.mark_unfinished(self.events, "error", **said)
                self.events.emit("failed", **said)
        return "failed"

    def give_up(self, cause: str) -> None:
        """The watch's last resort, Tune's loop stuck in Ray: say it, record the end as the entry point
        does, and end this process (its trials went with the cluster)."""
        self.cluster_gone(cause)
        entry.end_now(entry.EXIT_FAILED)


def build_tuner(run: RunDir, config: Config, resume: bool, events: EventWriter) -> tune.Tuner:
    """A new Tuner, or the saved search restored (`--resume` with experiment state to restore)."""
    trainable = tune.with_resources(
        tune.with_parameters(train_trial, tune_config=config, run_path=str(run.path.resolve())),
        resources(config["tune"]))
    path = results_dir(run) / EXPERIMENT
    if resume and tune.Tuner.can_restore(str(path)):
        return tune.Tuner.restore(str(path), trainable=trainable, resume_unfinished=True,
                                  resume_errored=False, restart_errored=False)
    if resume:
        events.emit("warning", code="no_search_state", message="--resume: no saved search state yet",
                    hint="the search starts from the beginning")
    tune_cfg = config["tune"]
    search_alg = space.searcher(tune_cfg)
    tune_config = tune.TuneConfig(
        metric=tune_cfg["metric"], mode=tune_cfg["mode"], search_alg=search_alg,
        scheduler=space.scheduler(tune_cfg), num_samples=tune_cfg["num_samples"],
        max_concurrent_trials=None if space.is_generator(search_alg) else tune_cfg["max_concurrent"],
        reuse_actors=tune_cfg["reuse_actors"],
    )
    run_config = tune.RunConfig(
        name=EXPERIMENT, storage_path=str(results_dir(run)), verbose=0,
        callbacks=[bridge.TrialEvents(run.path, events.run_id, tune_cfg),
                   pending.PendingWatch(run.path, events.run_id, cluster=bool(tune_cfg["ray_address"]))],
        stop=bridge.TrialStopper(run.path),
        checkpoint_config=tune.CheckpointConfig(num_to_keep=1),
        failure_config=tune.FailureConfig(max_failures=0),
    )
    return tune.Tuner(trainable, param_space=space.param_space(tune_cfg["space"]), tune_config=tune_config,
                      run_config=run_config)


def resources(tune_cfg: dict[str, Any]) -> dict[str, float]:
    """What one trial reserves."""
    wanted = {"cpu": tune_cfg["cpus_per_trial"], "gpu": tune_cfg["gpus_per_trial"]}
    return {k: v for k, v in wanted.items() if v}


def results_dir(run: RunDir) -> Path:
    """Where Tune keeps results and the experiment state (inside the run directory)."""
    return run.path.resolve() / "ray_results"


def started_fields(config: Config, temp: Path | None, init_s: float, resume: bool) -> dict[str, Any]:
    """The tune run's `started` event: what it optimises and searches, and where its Ray lives."""
    t = config["tune"]
    return {
        "strategy": "tune", "metric": t["metric"], "mode": t["mode"], "search": t["search"],
        "scheduler": t["scheduler"], "num_samples": t["num_samples"], "max_t": t["max_t"],
        "max_concurrent": t["max_concurrent"], "space": t["space"],
        "keys": {short: key for key, short in short_names(list(t["space"])).items()},
        "ray_address": t["ray_address"] or os.environ.get(ENV_ADDRESS) or "local",
        "ray_temp_dir": str(temp) if temp else None,
        "ray_init_s": round(init_s, 3), "resumed": resume,
    }


def report_end(grid: Any, tune_cfg: dict[str, Any], events: EventWriter) -> str:
    """`stopped` after a SIGTERM or with trials stuck pending (`pending`); else `finished` with the best
    trial, or `failed` if none reported."""
    names = short_names(list(tune_cfg["space"]))
    counts = {"trials": len(grid), "errors": grid.num_errors}
    if stopping.requested() or pending.stuck():
        bridge.mark_unfinished_stopped(events)
        stuck = {"cause": "trials pending with nothing running"} if not stopping.requested() else {}
        events.emit("stopped", **counts, **stuck)
        return "stopped"
    column = tune_cfg["metric"]
    try:
        best = grid.get_best_result(metric=column, mode=tune_cfg["mode"], scope="all")
    except RuntimeError:
        best = None
    value = None if best is None else _best(best.metrics_dataframe, column, tune_cfg["mode"])
    if value is None:  # no trial reported the metric (Tune may still name an errored trial "best")
        first = next((r.error for r in grid if r.error is not None), None)
        cause, hint = bridge.cause_of(first) if first is not None else ("", "")
        cause = "no trial reported a result" + (f"; first error: {cause}" if cause else "")
        events.emit("failed", cause=cause,
                    hint=hint or "see the trials' errors (trainconsole logs ID)", **counts)
        return "failed"
    acc = _best(best.metrics_dataframe, "val_acc", "max")  # val_acc too: `ls` shows the best accuracy
    events.emit("finished", best_trial=best.metrics["trial_id"], metric=column, best_value=value,
                best_config={names.get(k, k): plain(k, v) for k, v in best.config.items()},
                best_val_acc=acc, val_acc=acc, **counts)
    return "finished"


def _best(frame: Any, column: str, mode: str) -> float | None:
    """The best value of a column over all of a trial's results (None if it has none)."""
    if frame is None or column not in frame:
        return None
    value = frame[column].max() if mode == "max" else frame[column].min()
    return None if value != value else float(value)  # NaN: no value
