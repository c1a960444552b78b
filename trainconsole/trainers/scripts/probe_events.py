"""The events of the probe's own figures (`source: "probe"`): a `step` event for each record of the run's
main process (its step, epoch, loss, lr, samples and memory, measured in the process), the leak watch on
that memory, a warning at the step a loss first turned NaN or infinite, and what an uncaught exception
(an out-of-memory) left: the step and the memory at that moment."""

from __future__ import annotations

import math
from typing import Any

from trainconsole.protocol import EventWriter
from trainconsole.protocol.events import SOURCE_PROBE, STEP, WARNING
from trainconsole.trainers.troubles.leaks import LeakWatch

from .inject._trainconsole_probe import R
from .line_events import LEAK_WARMUP_STEPS
from .names import name
from .tracebacks import hint

MB = 1 << 20
PROBE = SOURCE_PROBE


class ProbeFigures:
    """Turns the main process's `step`, `nonfinite` and `exit` records into events."""

    def __init__(self, writer: EventWriter, epochs: int | None = None) -> None:
        self.writer, self.epochs = writer, epochs
        self.leaks = LeakWatch(warmup_steps=LEAK_WARMUP_STEPS)
        self.step = 0  # the last step written
        self.epoch: int | None = None
        self.trained, self.seconds = 0, 0.0  # the last record's (samples/s between two)
        self.last: dict[str, float] = {}  # the last step's own losses, as fields (from the final record)
        self.warned_nonfinite = False
        self.exit: dict[str, Any] | None = None
        self.own: set[str] = set()  # the metrics the script reports itself: left out of the probe's events

    def record(self, rec: dict[str, Any]) -> None:
        """A `step` record: one `step` event when the step moved on."""
        step = int(rec.get(R.AT) or 0)
        if rec.get(R.FINAL):
            self.last = self.losses({R.NAMED: rec.get(R.LAST) or {}})
        if step <= self.step:
            return
        fields: dict[str, Any] = {"step": step, "source": PROBE}
        self.step, self.epoch = step, rec.get(R.EPOCH) or self.epoch
        if self.epoch:
            fields["epoch"] = self.epoch
        if self.epochs:
            fields["epochs"] = self.epochs
        fields.update(self.losses(rec))
        if rec.get(R.SEGMENT):  # the run's second model on (a study's trial, a fold)
            fields["segment"] = rec[R.SEGMENT]
        if "lr" not in self.own and _finite(rec.get(R.LR)):
            fields["lr"] = rec[R.LR]
            if len(rec.get(R.LRS) or ()) > 1:
                fields["lrs"] = rec[R.LRS]
        fields.update(self.speed(rec))
        mem = rec.get(R.MEM)
        self.writer.emit(STEP, **fields, **({"mem": mem} if mem else {}))
        leak = self.leaks.observe(step, mem) if mem else None
        if leak:
            self.writer.emit(WARNING, **leak)  # (its `source` names the memory figure: RSS, CUDA)

    def speed(self, rec: dict[str, Any]) -> dict[str, Any]:
        """The run's samples and seconds since its first step (their ratio the run's mean samples/s,
        `protocol.rates`), and this record's rate (the plot's): as the built-in trainer's step events."""
        trained, seconds = int(rec.get(R.TRAINED) or 0), float(rec.get(R.SECONDS) or 0.0)
        if not trained or seconds <= 0:
            return {}
        fields: dict[str, Any] = {"samples": trained, "train_s": seconds}
        if seconds > self.seconds and trained > self.trained:
            fields["samples_per_s"] = round((trained - self.trained) / (seconds - self.seconds), 1)
        self.trained, self.seconds = trained, seconds
        return fields

    def losses(self, rec: dict[str, Any]) -> dict[str, float]:
        """The record's losses as fields: `loss`, or each optimizer's under its name (`loss_D` -> `loss_d`,
        as a printed `Loss_D` is named), but those the script reports itself and the non-finite ones."""
        found = {name(k): v for k, v in (rec.get(R.NAMED) or {}).items()}
        if R.LOSS in rec:
            found["loss"] = rec[R.LOSS]
        return {k: v for k, v in found.items() if _finite(v) and k not in self.own}

    def nonfinite(self, rec: dict[str, Any], who: str = "") -> None:
        """The first NaN/inf loss of the run, warned at its step with the explainer's hint."""
        if self.warned_nonfinite:
            return
        self.warned_nonfinite = True
        step, loss = rec.get(R.AT), rec.get(R.LOSS)
        self.writer.emit(WARNING, code="nonfinite_loss", step=step, loss=loss, source=PROBE,
                         message=f"the loss became {loss} at step {step}{who}",
                         hint=hint("loss is nan"), **({"epoch": rec[R.EPOCH]} if rec.get(R.EPOCH) else {}))

    def failure(self) -> dict[str, Any]:
        """For the `failed` event: the step and memory when an exception ended the main process."""
        if not self.exit:
            return {}
        step, mem = self.exit.get(R.AT), self.exit.get(R.MEM) or {}
        said = [f"{d['device']} {d['allocated'] / MB:.0f} MB allocated (peak {d['peak'] / MB:.0f} MB)"
                for d in mem.get("devices") or []]
        said.append(f"RSS {int(mem.get('rss') or 0) / MB:.0f} MB")
        return {"step": step, "mem": mem, "at": f"at step {step}: " + ", ".join(said)}


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
