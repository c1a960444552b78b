"""A tune run's trials, built from its `trial` events and ranked live by the tune metric (pure: no Textual).

A `trial` event carries `trial_id`, `number`, `config` (the searched keys, short names), `status`
(pending, running, terminated, stopped_early, error, killed), `iteration`, `metrics` and, on error, `cause`;
from a result also the worker's `mem` and `samples_per_s`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trainconsole.console.core.figures import count, figure
from trainconsole.console.core.history import Series
from trainconsole.console.core.importance import importance
from trainconsole.protocol.best_trial import best_of, better, is_metric

Event = dict[str, Any]

#: Trial statuses as the leaderboard shows them (`stopped_early` gets the iteration it reached).
SHORT_STATUS = {"pending": "pending", "running": "running", "terminated": "done", "stopped_early": "cut",
                "error": "error", "killed": "killed", "stopped": "stopped"}


@dataclass
class Trial:
    """One trial of a search: its searched values, status, and the tune metric over iterations."""

    id: str
    number: int = 0
    status: str = "pending"
    iteration: int = 0
    config: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    cause: str = ""
    best: float | None = None
    curve: Series = field(default_factory=Series)
    peak_mb: float | None = None  # the worker's largest memory seen (GPU peak, else host RSS)
    samples_per_s: float | None = None  # its mean training speed (protocol.rates), as last reported

    def apply(self, event: Event, metric: str, mode: str) -> None:
        """Take one `trial` event."""
        self.number = _int(event.get("number"), self.number)
        self.status = str(event.get("status") or self.status)
        self.iteration = _int(event.get("iteration"), self.iteration)
        self.config = event.get("config") if isinstance(event.get("config"), dict) else self.config
        self.cause = str(event.get("cause") or self.cause)
        used = _used_mb(event.get("mem"))
        if used is not None:
            self.peak_mb = max(self.peak_mb or 0.0, used)
        if is_metric(event.get("samples_per_s")):
            self.samples_per_s = float(event["samples_per_s"])
        metrics = event.get("metrics")
        if isinstance(metrics, dict) and metrics:
            self.metrics = {**self.metrics, **metrics}
            value = metrics.get(metric)
            if is_metric(value) and self.curve.append(self.iteration, value):
                self.best = value if better(value, self.best, mode) else self.best


@dataclass
class Search:
    """The tune metric and mode of a search, and its trials by id."""

    metric: str = "val_acc"
    mode: str = "max"
    trials: dict[str, Trial] = field(default_factory=dict)
    best_trial: str | None = None  # from the search's `finished` event, when it has one

    def apply(self, event: Event) -> None:
        """Take a `trial` event (others are ignored)."""
        trial_id = event.get("trial_id")
        if event.get("type") != "trial" or not trial_id:
            return
        trial = self.trials.get(str(trial_id))
        if trial is None:
            trial = self.trials[str(trial_id)] = Trial(str(trial_id))
        trial.apply(event, self.metric, self.mode)

    def ranked(self) -> list[Trial]:
        """Trials best first by their best metric value; trials with none yet last, by number."""
        sign = -1.0 if self.mode == "max" else 1.0
        return sorted(self.trials.values(),
                      key=lambda t: (t.best is None, sign * (t.best or 0.0), t.number, t.id))

    def importance(self) -> list[tuple[str, float]]:
        """Each searched parameter's share of the metric's variance over the trials that ended."""
        ended = [(t.config, t.best) for t in self.trials.values()
                 if t.best is not None and t.status not in ("pending", "running")]
        return importance(ended)

    def ended_with(self, status: str) -> None:
        """The search ended (killed, failed, stopped) with trials still pending or running: they ended
        with it (their own last events still say they run)."""
        for trial in self.trials.values():
            if trial.status in ("pending", "running"):
                trial.status = "killed" if status in ("killed", "failed") else status

    def leader(self) -> Trial | None:
        """The best trial so far (the search's own verdict once it has finished)."""
        found = best_of({t.id: t.best for t in self.ranked()}, self.mode, self.best_trial)
        return None if found is None else self.trials[found]


def status_text(trial: Trial) -> str:
    """`cut@3` for a trial the early stopper stopped at iteration 3, else the short status."""
    if trial.status == "stopped_early":
        return f"cut@{trial.iteration}"
    return SHORT_STATUS.get(trial.status, trial.status)


#: Short names for the keys searched most often, so several values fit in a narrow column.
ABBREVIATIONS = {"batch_size": "bs", "optimizer": "opt", "weight_decay": "wd", "momentum": "mom",
                 "lr_schedule": "sched", "precision": "prec", "dropout": "drop"}


def why_not_stop(trial: Trial, search_status: str) -> str | None:
    """Why a trial cannot be asked to stop (its search no longer runs, or it has ended): the CLI's
    `stop-trial` and the console's `x` say this instead of asking; None when it can."""
    if search_status != "running":  # no driver reads the request
        return f"the search is {search_status}: a trial stops only while its search runs"
    if trial.status not in ("pending", "running"):
        return f"trial #{trial.number} has ended ({trial.status}): there is nothing to stop"
    return None


def searched(config: dict[str, Any]) -> str:
    """The searched values, compact: `lr=0.0123 bs=64 opt=adam`."""
    names = {key: ABBREVIATIONS.get(key.rsplit(".", 1)[-1], key.rsplit(".", 1)[-1]) for key in config}
    return " ".join(f"{names[key]}={_short(value)}" for key, value in config.items())


#: The leaderboard's metric and iteration columns' widths: a longer figure is shown shorter, never cut.
METRIC_WIDTH, ITER_WIDTH = 7, 3


def rows(search: Search) -> list[tuple[str, tuple[str, ...]]]:
    """The leaderboard's rows, best first: (trial id, (star, trial, status, iter, metric, memory,
    samples/s, values))."""
    leader = search.leader()
    out = []
    for trial in search.ranked():
        star = "★" if leader is not None and trial.id == leader.id else ""
        metric = "-" if trial.best is None else figure(trial.best, METRIC_WIDTH)  # (a loss of 3.269e-05 cut)
        values = trial.cause if trial.status == "error" else searched(trial.config)
        name = f"#{trial.number}" if trial.number else trial.id[-6:]
        cells = (star, name, status_text(trial), count(trial.iteration, ITER_WIDTH, "d"), metric,
                 _mb(trial.peak_mb), _rate(trial.samples_per_s), values)
        out.append((trial.id, cells))
    return out


def importance_bars(search: Search, width: int = 20) -> list[str]:
    """The parameter importance as ranked text bars: `lr        ████████████▌ 0.72`."""
    ranked = search.importance()
    name_width = max((len(key.rsplit(".", 1)[-1]) for key, _ in ranked), default=0)
    return [f"{key.rsplit('.', 1)[-1]:<{name_width}} {_bar(score, width):<{width}} {score:.2f}"
            for key, score in ranked]


def ended(search: Search) -> list[tuple[dict[str, Any], float]]:
    """The searched values and best metric of each trial that ended: what importance is computed from
    (a copy, so another thread may compute while the search goes on)."""
    return [(dict(t.config), t.best) for t in search.trials.values()
            if t.best is not None and t.status not in ("pending", "running")]


def importance_line(trials: list[tuple[dict[str, Any], float]], width: int = 6) -> str:
    """`importance: lr ████▌ 0.72 · bs ▏ 0.05`, ranked; '' with too few ended trials to say."""
    ranked = importance(trials)
    if not ranked:
        return ""
    return "importance: " + " · ".join(f"{key.rsplit('.', 1)[-1]} {_bar(score, width)} {score:.2f}"
                                       for key, score in ranked)


def _used_mb(mem: Any) -> float | None:
    if not isinstance(mem, dict) or not mem:
        return None
    devices = [d for d in mem.get("devices") or [] if isinstance(d, dict)]
    if devices:
        return max(float(d.get("peak") or d.get("allocated") or 0) for d in devices) / 2**20
    return float(mem["rss"]) / 2**20 if is_metric(mem.get("rss")) else None


def _mb(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}M" if value < 1000 else f"{value / 1024:.1f}G"


def _rate(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}" if value < 1000 else f"{value / 1000:.1f}k"


def _bar(fraction: float, width: int) -> str:
    eighths = round(max(0.0, min(1.0, fraction)) * width * 8)
    return "█" * (eighths // 8) + ("", "▏", "▎", "▍", "▌", "▋", "▊", "▉")[eighths % 8]


def _short(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default
