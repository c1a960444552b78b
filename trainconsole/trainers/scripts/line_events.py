"""The events one placed line of a script's output gives: `step` (with the process tree's memory and the
leak watch), `eval`, `result` (after training) and `summary` (an epoch's, without a step of its own)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from trainconsole.protocol import EventWriter
from trainconsole.protocol.events import EVAL, RESULT, STEP, SUMMARY, WARNING
from trainconsole.trainers.troubles.leaks import LeakWatch

from .parsed import Parsed

#: Step events (printed metric lines) before the leak watch judges the script's memory.
LEAK_WARMUP_STEPS = 10


class LineEvents:
    """Writes a line's events at the step it was placed at; remembers the last step and best val_acc."""

    def __init__(self, writer: EventWriter, memory: Callable[[], dict[str, Any] | None],
                 mem_interval: float) -> None:
        self.writer, self.memory = writer, memory
        self.mem_due, self.mem_interval = 0.0, mem_interval
        self.leaks = LeakWatch(warmup_steps=LEAK_WARMUP_STEPS)
        self.emitted: int | None = None  # the step of the last step event
        self.best_val_acc: float | None = None

    def emit(self, step: int, parsed: Parsed, where: dict[str, Any]) -> None:
        """The line's step, eval and result events (its timing goes with the first of them)."""
        where = {"step": step, **where}
        timing = {"timing": parsed.timing} if parsed.timing else {}
        if parsed.step:
            self._step(step, {**where, **parsed.step, **timing})
            timing = {}
        if parsed.eval:
            self.writer.emit(EVAL, **where, **parsed.eval, **timing)
            self._best(parsed.eval.get("val_acc"))
            timing = {}
        if parsed.result:
            self.writer.emit(RESULT, **where, **parsed.result, **timing)

    def summary(self, step: int, parsed: Parsed, where: dict[str, Any]) -> None:
        """`Epoch 1/3 - Loss: 0.41`: the line's training metrics as the epoch's summary, taken off it."""
        timing, parsed.timing = parsed.timing, {}
        fields, parsed.step = parsed.step, {}
        self.writer.emit(SUMMARY, step=step, **where, **fields, **({"timing": timing} if timing else {}))

    def _step(self, step: int, fields: dict[str, Any]) -> None:
        self.emitted = step
        mem = self._mem()
        self.writer.emit(STEP, **fields, **mem)
        leak = self.leaks.observe(step, mem["mem"]) if mem else None
        if leak:
            self.writer.emit(WARNING, **leak)

    def _best(self, acc: float | None) -> None:
        if acc is not None and (self.best_val_acc is None or acc > self.best_val_acc):
            self.best_val_acc = acc

    def _mem(self) -> dict[str, Any]:
        # Sampling the process tree costs a few ms: at most once a second.
        now = time.monotonic()
        if now < self.mem_due:
            return {}
        self.mem_due = now + self.mem_interval
        mem = self.memory()
        return {"mem": mem} if mem else {}
