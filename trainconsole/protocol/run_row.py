"""A run's row from its events: the one fold the console's live runs and the run index both use (stdlib).

`RunRow.apply` takes events in log order and keeps the facts a row shows (its strategy, epoch, loss,
accuracy, rate, final event, ...). The console's `RunState` is a `RunRow` with histories and notes on
top; the run index folds the lines it reads of an ended run into one and keeps `facts()`, which
`RunRow.from_facts` gives back. A new column is a field and a line of `apply` here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any

from .events import EVAL, FINAL, FINISHED, STARTED, STEP, WARNING, Event
from .rates import MeanRate

#: The statuses of a run that has ended (a lost run's process is gone without a final word).
ENDED = (*FINAL.values(), "lost")
#: The statuses of a run whose process is (or will be) at work: every other status is in ENDED.
LIVE = ("running", "queued")
#: A step event's fields that are not a training metric of its own (the trainer's rate and learning
#: rate included: the console's `m` cycles through what a script logs beside its loss).
NOT_METRICS = frozenset({"v", "t", "run", "type", "step", "epoch", "epochs", "rank", "count", "samples",
                         "train_s", "mem", "timing", "lr", "samples_per_s", "segment"})
#: The warnings that say a run waits for disk space, and that it has it back.
DISK_CODES = ("disk_full", "disk_space_back")
#: What a run waiting for disk space is paused for: the `ls` row's `paused`, the status cell's words.
DISK_FULL = "disk full"


def paused_for(status: str, disk_full: bool) -> str | None:
    """What a run is paused for: DISK_FULL while its last word on the disk is `disk_full` and it runs
    (it waits) or is lost (it vanished waiting); else None."""
    return DISK_FULL if disk_full and status in ("running", "lost") else None


def status_label(status: str, paused: str | None) -> str:
    """A status as a run's row shows it: `paused: disk full` for a running run that waits, `lost: disk
    full` for one lost while it waited (`paused`: `paused_for`'s word)."""
    if not paused:
        return status
    return f"{'paused' if status == 'running' else status}: {paused}"


def is_num(value: Any) -> bool:
    """A number (not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def loss_key(fields_: dict[str, Any], current: str | None) -> str | None:
    """The field of a step shown as its loss: `loss`, else (dcgan's `Loss_D`) the first loss-like field
    that is a number; `current` (the run's so far) holds until a `loss` appears."""
    if current is not None and (current == "loss" or not is_num(fields_.get("loss"))):
        return current
    if is_num(fields_.get("loss")):
        return "loss"
    return next((k for k, v in fields_.items() if "loss" in k.lower() and is_num(v) and k not in NOT_METRICS),
                None)


@dataclass
class RunRow:
    """The facts of one run's row that its events give (run.json's are the caller's)."""

    id: str = ""
    strategy: str = ""
    epochs: int | None = None  # a script's total, from its argv or its printed `Epoch 3/10`
    said_started: bool = False  # its log has a `started` (since the last launch)
    started_t: float | None = None  # when it last said so (a resumed Slurm job waits after an old one)
    final: str | None = None  # the status its last final event gives (None since a `started`)
    final_t: float = 0.0
    world_size: int | None = None
    devices: Any = None
    params: int | None = None
    trainable_params: int | None = None
    metric: str | None = None  # a search's: what its trials are ranked by, and which way
    mode: str | None = None
    step: int | None = None
    epoch: int | None = None
    lr: float | None = None
    loss: float | None = None
    loss_key: str | None = None  # the step field shown as its loss (`loss_key`)
    samples_per_s: float | None = None  # the run's mean over its training (protocol.rates)
    rate: MeanRate = field(default_factory=MeanRate)
    val_loss: float | None = None
    val_acc: float | None = None
    best_val_acc: float | None = None
    disk_full: bool = False  # its last word on the disk was `disk_full` (paused, or lost for it)
    t_first: float | None = None
    t_last: float | None = None
    events: int = 0

    def apply(self, event: Event) -> None:
        """Take one event's facts (unknown kinds count, and change nothing else)."""
        t = event.get("t")
        if isinstance(t, (int, float)) and not isinstance(t, bool):  # (is_num, inlined: every event)
            self.t_first = t if self.t_first is None else self.t_first
            self.t_last = t
        else:
            t = 0.0
        self.events += 1
        take = _TAKES.get(event.get("type", ""))
        if take is not None:
            take(self, event, float(t))

    def facts(self) -> dict[str, Any]:
        """The row's facts as JSON-ready values (the run index keeps them)."""
        return {f.name: getattr(self, f.name) for f in fields(RunRow) if f.name not in _NOT_FACTS}

    def take_facts(self, facts: dict[str, Any]) -> None:
        """Take back what `facts` gave (other keys are ignored)."""
        for name in _FACT_NAMES & facts.keys():
            setattr(self, name, facts[name])

    @staticmethod
    def has_facts(facts: dict[str, Any]) -> bool:
        """Whether `facts` holds every fact of a row (not: a summary of an older shape)."""
        return _FACT_NAMES <= facts.keys()


def _started(row: RunRow, e: Event, t: float) -> None:
    row.final, row.said_started, row.started_t = None, True, t
    if isinstance(e.get("epochs"), int):  # a script's total, from its argv
        row.epochs = e["epochs"]
    row.strategy = e.get("strategy") or row.strategy
    for key in ("world_size", "devices", "params", "trainable_params"):
        setattr(row, key, e.get(key, getattr(row, key)))
    if e.get("metric") and e.get("mode") in ("max", "min"):  # a search names what it optimises
        row.metric, row.mode = str(e["metric"]), e["mode"]


def _step(row: RunRow, e: Event, t: float) -> None:
    for key in ("step", "epoch", "lr"):
        if e.get(key) is not None:
            setattr(row, key, e[key])
    row.rate.add(e)
    rate = row.rate.value
    row.samples_per_s = rate if rate is not None else row.samples_per_s
    if isinstance(e.get("epochs"), int):  # a script's total, as printed (`Epoch 3/10`)
        row.epochs = e["epochs"]
    if row.loss_key != "loss":  # (settled once a step has said `loss`: most runs, every step after the first)
        row.loss_key = loss_key(e, row.loss_key)
    loss = e.get(row.loss_key or "loss")
    if is_num(loss):
        row.loss = loss


def _eval(row: RunRow, e: Event, t: float) -> None:
    row.epoch = e.get("epoch", row.epoch)
    for key in ("val_loss", "val_acc"):
        if is_num(e.get(key)):
            setattr(row, key, e[key])
    _best(row, e.get("val_acc"))


def _best(row: RunRow, acc: Any) -> None:
    """The best val_acc so far (NaN never wins)."""
    if is_num(acc) and not math.isnan(acc) and (row.best_val_acc is None or acc > row.best_val_acc):
        row.best_val_acc = acc


def _warning(row: RunRow, e: Event, t: float) -> None:
    if e.get("code") in DISK_CODES:
        row.disk_full = e["code"] == "disk_full"


def _final(row: RunRow, e: Event, t: float) -> None:
    row.final, row.final_t = FINAL[e["type"]], t
    if e["type"] == FINISHED and is_num(e.get("best_val_acc")):  # the trainer's own word on its best
        row.best_val_acc = e["best_val_acc"]
    if e["type"] == FINISHED and is_num(e.get(row.loss_key or "loss")):  # a script's last step's own loss
        row.loss = e[row.loss_key or "loss"]


_TAKES = {STARTED: _started, STEP: _step, EVAL: _eval, WARNING: _warning,
          **dict.fromkeys(FINAL, _final)}
_NOT_FACTS = ("id", "rate", "events")  # the caller's; a fold's own; a count of what this reader read
_FACT_NAMES = {f.name for f in fields(RunRow)} - set(_NOT_FACTS)
