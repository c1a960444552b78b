"""The plot's lines: each run's loss (or the metric `m` chose), val loss and val accuracy, decimated, and a
search's trials' curves. Pure; `board.plot_view` picks the runs a frame plots."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from trainconsole.console.core import leaderboard
from trainconsole.console.core.run_state import RunState, label

#: One colour per overlaid or compared run, in order (the plot, the compare view's tables and legend).
RUN_COLORS = ("cyan", "magenta", "yellow", "green", "blue", "red")


@dataclass(frozen=True)
class PlotLine:
    """One line of the plot: a run's train loss, val loss or val accuracy, already decimated."""

    run_id: str
    label: str
    kind: str  # "train", "val_loss", "val_acc", "oom" (steps where an out-of-memory was recovered), or
    # "cut" (the point where the early stopper cut a trial)
    xs: list[float]
    ys: list[float]


def plot_lines(runs: Iterable[RunState], buckets: int) -> list[PlotLine]:
    """Each run's train loss per step (decimated to `buckets` min/max pairs), val loss and val acc."""
    lines = []
    for run in runs:
        name = label(run)
        if run.plotted in run.metrics:  # another metric than the loss (m): it alone
            xs, ys = run.metrics[run.plotted].decimate(buckets)
            lines.append(PlotLine(run.id, name, "train", xs, ys))
            continue
        for kind, series in (("train", run.train_loss), ("val_loss", run.val_losses),
                             ("val_acc", run.val_accs)):
            if len(series):
                xs, ys = series.decimate(buckets)
                lines.append(PlotLine(run.id, name, kind, xs, ys))
        if run.oom_steps:
            lines.append(PlotLine(run.id, name, "oom", list(run.oom_steps), []))
    return lines


def plotted(run: RunState) -> str:
    """The name of the metric a run's plot shows (its loss unless m chose another)."""
    return run.plotted if run.plotted in run.metrics else run.loss_key or "loss"


def next_metric(run: RunState) -> str | None:
    """The metric m shows next for a run: its loss, then each other metric its steps carry, in turn
    (None: the loss)."""
    order = [None, *run.metrics]
    now = run.plotted if run.plotted in run.metrics else None
    return order[(order.index(now) + 1) % len(order)]


def trial_lines(search: leaderboard.Search, buckets: int) -> list[PlotLine]:
    """Each trial's tune metric per iteration, best trial first (a colour per trial)."""
    kind = "val_acc" if search.mode == "max" else "val_loss"
    lines = []
    for trial in search.ranked():
        if len(trial.curve):
            xs, ys = trial.curve.decimate(buckets)
            lines.append(PlotLine(trial.id, f"#{trial.number}", kind, xs, ys))
            if trial.status == "stopped_early":  # where ASHA cut it
                lines.append(PlotLine(trial.id, f"#{trial.number}", "cut", xs[-1:], ys[-1:]))
    return lines
