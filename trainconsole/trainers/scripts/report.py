"""`from trainconsole.trainers import report`: a script's own metrics into its run's event log (stdlib only).

Under trainconsole the runner sets TRAINCONSOLE_EVENTS (the run's events.jsonl) and TRAINCONSOLE_RUN_ID;
without them `report` does nothing, so a script runs the same under plain python. Training metrics are
summed as given (tensors stay on their device) and written at most ~10 times a second as one `step` event
carrying each metric's mean since the last and the number of steps, so calling `report` every step costs
no host-device sync; `val_*` metrics are written at once as an `eval` event. Only global rank 0 (RANK)
writes. Steps are counted, not calls: a `step=` given says which step it is; without one, a call starts a
new step only when it reports a metric already reported in the current step (so `report(loss=...)` and
`report(lr=...)` in one iteration are one step), and an event is written at the end of a step, never
between two calls of one.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import time
from typing import Any

from trainconsole.protocol.events import EventWriter

ENV_EVENTS = "TRAINCONSOLE_EVENTS"
ENV_RUN_ID = "TRAINCONSOLE_RUN_ID"
ENV_PROBE_DIR = "TRAINCONSOLE_PROBE_DIR"  # the probe's channel (probe_channel.ENV_CHANNEL)
INTERVAL_S = 0.1
#: Metrics that describe an evaluation: written at once, never averaged.
EVAL_PREFIXES = ("val_", "test_", "eval_")


class Reporter:
    """Turns `report(...)` calls into `step` and `eval` events for one run."""

    def __init__(self, writer: EventWriter, interval: float = INTERVAL_S) -> None:
        self.writer = writer
        self.interval = interval
        self.sums: dict[str, Any] = {}
        self.counts: dict[str, int] = {}  # reports of each metric since the last event
        self.count = 0  # steps since the last event
        self.current: set[str] = set()  # the metrics reported in the current step
        self.previous: set[str] = set()  # those of the step before: the current one is whole when it has them
        self.step: int | None = None
        self.epoch: int | None = None
        self.due_at = time.monotonic() + interval
        self.announced: set[str] = set()  # the metrics the probe was told the script reports

    def __call__(self, step: int | None = None, epoch: int | None = None, **metrics: Any) -> None:
        """Record one report; write a `step` event when one is due and an `eval` event for val_* metrics."""
        evals = {k: v for k, v in metrics.items() if k.startswith(EVAL_PREFIXES)}
        train = {k: v for k, v in metrics.items() if k not in evals}
        if evals:
            self.flush()  # the pending training metrics keep their own step and epoch
        new_step = self._new_step(step, train.keys())
        if new_step is not None:
            if self._due():  # the steps before this one are whole
                self.flush()
            self.step, self.previous, self.current = new_step, self.current or self.previous, set()
            self.count += bool(train)
        self.epoch = _whole(epoch) if epoch is not None else self.epoch
        if metrics.keys() - self.announced:  # evaluations too: a printed `val_acc` is then no second series
            self.announced |= metrics.keys()
            announce(self.announced)
        if train:  # counted once, when its step began (a step written half way keeps its count)
            self.current |= train.keys()
            self._add(train)
        if evals:
            self.writer.emit("eval", **self._where(), **_floats(evals))
        if self.previous and self.current >= self.previous and self._due():
            self.flush()  # the current step has all its metrics: no need to wait for the next one

    def _new_step(self, step: int | None, keys: Any) -> int | None:
        """The step this call starts, None when it belongs to the current one."""
        if step is not None:
            return _whole(step) if _whole(step) != self.step else None
        if keys and (self.step is None or self.current & keys):
            return (self.step or 0) + 1
        return None

    def _due(self) -> bool:
        # Written only at the end of a step, or a step's metrics would be split over two events.
        return bool(self.count) and time.monotonic() >= self.due_at

    def flush(self) -> None:
        """Write the pending training metrics as one `step` event (means since the last, steps begun)."""
        if not self.sums:
            return
        means = {k: _float(v) / self.counts[k] for k, v in self.sums.items()}
        self.writer.emit("step", **self._where(), **means, count=self.count)
        self.sums, self.counts, self.count = {}, {}, 0
        self.due_at = time.monotonic() + self.interval

    def _add(self, metrics: dict[str, Any]) -> None:
        for key, value in metrics.items():
            value = _detached(value)
            self.sums[key] = value if key not in self.sums else self.sums[key] + value
            self.counts[key] = self.counts.get(key, 0) + 1

    def _where(self) -> dict[str, Any]:
        return {k: v for k, v in (("step", self.step), ("epoch", self.epoch)) if v is not None}


def announce(names: set[str]) -> None:
    """Tell the probe (through its channel, as one of this process's records) which metrics the script
    reports itself: its step events and the printed lines then leave them out, so that a `loss` or a
    `val_acc` is never two series."""
    folder = os.environ.get(ENV_PROBE_DIR)
    if not folder:
        return
    line = json.dumps({"k": "reports", "names": sorted(names)}, separators=(",", ":")) + "\n"
    try:
        fd = os.open(os.path.join(folder, f"{os.getpid()}.jsonl"), os.O_WRONLY | os.O_CREAT | os.O_APPEND,
                     0o644)
        try:
            os.write(fd, line.encode())  # one write of a whole line, as the probe's own records
        finally:
            os.close(fd)
    except OSError:
        pass  # the run's folder is gone: the script goes on


def _detached(value: Any) -> Any:
    # A tensor stays a tensor (on its device) until the event is written: no sync per call.
    if hasattr(value, "detach"):
        return value.detach()
    return float(value)


def _float(value: Any) -> float:
    return float(value.item()) if hasattr(value, "item") else float(value)


def _whole(value: Any) -> int:
    return int(_float(value))


def _floats(metrics: dict[str, Any]) -> dict[str, float]:
    return {k: _float(v) for k, v in metrics.items()}


_REPORTER: list[Reporter | None] = []


def _reporter() -> Reporter | None:
    """The process's reporter, made on first use; None when not under trainconsole or not rank 0."""
    if not _REPORTER:
        path, run_id = os.environ.get(ENV_EVENTS), os.environ.get(ENV_RUN_ID, "")
        rank0 = os.environ.get("RANK", "0") == "0"
        reporter = Reporter(EventWriter(path, run_id)) if path and rank0 else None
        if reporter is not None:
            atexit.register(reporter.flush)
        _REPORTER.append(reporter)
    return _REPORTER[0]


def report(step: int | None = None, epoch: int | None = None, **metrics: Any) -> None:
    """Report metrics to trainconsole, e.g. `report(step=i, loss=loss, epoch=e)` or `report(val_acc=acc)`.

    Values may be numbers or tensors (anything with `.item()` or `float()`); a no-op outside trainconsole.
    """
    reporter = _reporter()
    if reporter is None:
        return
    try:
        reporter(step=step, epoch=epoch, **metrics)
    except (TypeError, ValueError) as e:  # a bad value must never stop the user's training
        print(f"trainconsole report: ignored ({e})", file=sys.stderr)
