"""A script's printed lines into events (`line_events.LineEvents` writes them).

Each line (or refreshed state of a line) from a `pump.Pump` is read by `formats.read` (a structured
format exactly, else the printed-line guesses); `steps.Steps` places it (epoch, global step, the rank
that counts) and `bars.Bars` places tqdm's states. A progress bar's state waits until its count moves on
or another line comes, so each count carries the last state drawn at it; a rank's line waits for a lower
rank's of the same step. HF Trainer's dicts take the count tqdm redraws right after writing them
(`redraws.Redraws`). Evaluation lines are told apart from training. The thread-safe entry points are
`stdout`, `stderr` and `close`.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from trainconsole.protocol import EventWriter

from .bars import EPOCH_BAR, PROGRESS, Bars
from .formats import read
from .keras_lines import PROGRESS as KERAS_PROGRESS
from .line_events import LEAK_WARMUP_STEPS, LineEvents
from .lines import compile_patterns, evaluation_heading, evaluation_progress, training_done
from .measured import Measured
from .parsed import Parsed
from .plain import plain
from .pump import MAX_LINE, Pump
from .redraws import Redraws
from .steps import Steps
from .tables import Tables
from .tracebacks import TracebackWatch

__all__ = ["MAX_LINE", "LEAK_WARMUP_STEPS", "OutputEvents", "Pump"]

#: The `HeldLine.stream` of a rank's line waiting for the same step's line of a lower rank.
RANKS = "ranks"


@dataclass
class HeldLine:
    """A line held back for the next: a progress bar's draw (its stream, bar total, step and what it showed),
    or a rank's line waiting for a lower rank's at the same step."""

    stream: str
    total: int | None
    step: int
    parsed: Parsed
    where: dict[str, Any]


class OutputEvents:
    """Turns the script's printed lines into events (thread-safe: both pumps call it)."""

    def __init__(self, writer: EventWriter, patterns: list[str], parse_output: bool = True,
                 memory: Callable[[], dict[str, Any] | None] = lambda: None,
                 mem_interval: float = 1.0, batch_size: int | None = None,
                 measured: Callable[[Callable[[str, str], None]], Measured] | None = None) -> None:
        self.patterns = compile_patterns(patterns)
        self.parse_output = parse_output
        self.watch = TracebackWatch()
        self.steps = Steps(batch_size)
        self.bars = Bars()
        self.pending: HeldLine | None = None  # the last line drawn at a bar's count, not yet written
        self.redraws = Redraws()  # HF Trainer lines and the bar redrawn after each
        self.tables = Tables()  # a table's header: its rows' values under their columns' names
        self.evaluating = False  # evaluation progress or heading came: the next result is the evaluation's
        self.eval_progress: Parsed | None = None  # the last batch line of an evaluation under way
        self.trained = False  # the script said training is over: evaluations are test results
        self.states: dict[str, str] = {}  # per stream, the current line's last refreshed state
        self.last_error = ""
        self.lock = threading.Lock()
        self.out = LineEvents(writer, memory, mem_interval)
        # The probe's view (None: `measure = false`); lines it does not take are read here as before.
        self.measured = measured(self._text_line) if measured else None

    @property
    def step(self) -> int:
        """The run's step so far (the probe's, where it measured one)."""
        if self.measured is not None and self.measured.active:
            return self.measured.figures.step
        return self.steps.step

    @property
    def best_val_acc(self) -> float | None:
        """The best validation accuracy printed so far."""
        if self.measured is not None and self.measured.active:
            return self.measured.best_val_acc
        return self.out.best_val_acc

    def poll(self) -> None:
        """Read the probe's channel (its records come between lines too)."""
        if self.measured is not None:
            with self.lock:
                self.measured.poll()

    def stdout(self, line: str, final: bool = True) -> None:
        """One line the script printed to stdout (`final` False: a state that a `\r` refreshes)."""
        with self.lock:
            self._read(line, final, "stdout")

    def stderr(self, line: str, final: bool = True) -> None:
        """One line on stderr: metrics too (logging and tqdm write there), and the traceback watch."""
        with self.lock:
            if final:
                self.watch.feed(line)
                self.last_error = plain(line).strip() or self.last_error
            self._read(line, final, "stderr")

    def close(self) -> None:
        """The output ended: write what still waits (a bar's last state, Trainer lines)."""
        with self.lock:
            if self.measured is not None:
                self.measured.close()
            self._flush()
            self._end_evaluation()
            self._unplaced(self.redraws.rest())

    def _read(self, line: str, final: bool, stream: str) -> None:
        """A line to the probe, which places it by its stamp, or else to the text readers."""
        if self.measured is not None and self.parse_output:
            shown = line if (line.strip() or not final) else self.states.get(stream) or line
            if self.measured.take(stream, shown, final):
                self.states[stream] = "" if final else line
                return
        self._metrics(line, final, stream)

    def _text_line(self, stream: str, line: str) -> None:
        """A line the probe held and gave back (no optimizer step came): read as before."""
        self._metrics(line, True, stream)

    def _metrics(self, line: str, final: bool, stream: str) -> None:
        if not self.parse_output:
            return
        if final and not line.strip() and self.states.get(stream):
            line = self.states[stream]  # `text\r\n`: the line's last state is the line
        self.states[stream] = "" if final else line
        text = plain(line)
        bar = PROGRESS.search(text) or KERAS_PROGRESS.match(text)
        if not (final or bar):
            self.redraws.state(stream, line, text)
            return  # a refreshed state without a counter: only the line's last state counts
        text = self.tables.named(text) if final and not bar else text
        parsed = read(text, self.patterns, self.evaluating, self.trained)
        if not self.steps.counts(parsed.where):
            return  # another rank's line: one step per printed step, the lowest rank's
        if bar and parsed.reader == "guess":
            self._tqdm_state(stream, text, parsed, bar)
        elif bar and parsed.where.counter is not None:
            self._state(stream, parsed.where.total, self._placed(parsed), parsed)
        else:
            self._line(text, parsed)

    def _tqdm_state(self, stream: str, text: str, parsed: Parsed, bar: re.Match[str]) -> None:
        n, total = int(bar["n"]), int(bar["total"])
        if parsed.where.counter is None:
            self.steps.place(parsed.where)  # the epoch its description says (`epoch 1: 40%|...`)
        if self.bars.outer(stream, text, total, bool(parsed.step)):
            if EPOCH_BAR.search(text):  # "epochs: 1/3": one epoch done, the second under way
                self.steps.epoch, self.bars.epochs_done = min(n + 1, total), n
            return
        step, new_bar = self.bars.step(stream, n, total, self.steps.step)
        if new_bar:
            self._flush()  # count 0 of a new bar never replaces the last state of the one before
        placed = self.redraws.bar(stream, total, step)
        if placed:
            self.out.emit(step, *placed)
        self._state(stream, total, step, parsed)

    def _state(self, stream: str, total: int | None, step: int, parsed: Parsed) -> None:
        """A bar's state at STEP: it replaces a state of the same count, and writes one of another."""
        self._evaluated(parsed)
        pending = self.pending
        if pending and not (pending.stream == stream and pending.total == total and pending.step == step):
            self._flush()
        self.steps.step = step
        if parsed.metrics:
            self.pending = HeldLine(stream, total, step, parsed, self._where(parsed))

    def _line(self, text: str, parsed: Parsed) -> None:
        if parsed.where.rank is not None and self._same_step_other_rank(parsed):
            return
        if parsed.metrics and not self._summary(parsed):
            # A line between two states of a bar (tqdm.write) writes the bar's waiting state first. An
            # epoch's summary leaves it waiting: printed on stdout after the bar (stderr) closed, it may be
            # read before the bar's last states, and a state written early would not be the count's last.
            self._flush()
        if parsed.reader == "guess" and self._evaluation(text, parsed):
            return
        if parsed.step_from_bar:
            self._trainer_line(parsed)
            return
        self._evaluated(parsed)
        step = self._placed(parsed)
        if parsed.where.rank is not None and self.out.emitted is not None and step <= self.out.emitted:
            parsed.step.clear()  # this rank's step was written already
        self.steps.step = step
        if parsed.where.rank is not None and parsed.step:  # waits: rank 0's line of this step may follow
            self.pending = HeldLine(RANKS, None, step, parsed, self._where(parsed))
        else:
            self.out.emit(step, parsed, self._where(parsed))

    def _same_step_other_rank(self, parsed: Parsed) -> bool:
        """A rank's line of the step whose line waits: the lower rank's values stay (rank 0's)."""
        pending = self.pending
        if not (pending and pending.stream == RANKS):
            return False
        step = self.steps.preview(parsed.where)
        if step != pending.step:
            return False
        if parsed.where.rank < (pending.parsed.where.rank or 0):  # type: ignore[operator]
            self.pending = HeldLine(RANKS, None, step, parsed, self._where(parsed))
        return True

    def _summary(self, parsed: Parsed) -> bool:
        """Whether a metric line is an epoch's summary (`_placed` writes it as one): no step of its own."""
        return bool(parsed.step) and self._positional() and self.steps.preview(parsed.where) is None

    def _placed(self, parsed: Parsed) -> int:
        """The step of a line: where it says, else the next step for a metric line (unless the steps come
        from positions: then it is a summary at the current step)."""
        placed = self.steps.place(parsed.where)
        if placed is None and parsed.step and self._positional():
            # `Epoch 1/3 - Loss: 0.41`: the epoch's summary, not a step of its own
            self.out.summary(self.steps.step, parsed, self._where(parsed))
        return placed if placed is not None else self.steps.step + bool(parsed.step)

    def _evaluation(self, text: str, parsed: Parsed) -> bool:
        """Lines about an evaluation that are not its result: `Test: [ 10/157] ...` (a batch of it, never
        a step of the run), `Test Error:` (its heading); and `Finished Training`. True: nothing to write."""
        self.trained = self.trained or training_done(text)
        if evaluation_progress(text, parsed):
            self.evaluating, self.eval_progress = True, parsed if parsed.eval else self.eval_progress
            return True
        if evaluation_heading(text, parsed):
            self.evaluating = True
            return True
        return False

    def _evaluated(self, parsed: Parsed) -> None:
        """A metric line after an evaluation's progress: its result, or training again (then the last
        progress line was the result)."""
        if parsed.metrics or parsed.where.counter is not None:
            self._end_evaluation(result=bool(parsed.eval))

    def _end_evaluation(self, result: bool = False) -> None:
        progress, self.eval_progress, self.evaluating = self.eval_progress, None, False
        if progress and not result:
            self.out.emit(self.steps.step, Parsed(eval=progress.eval), self._where(progress))

    def _positional(self) -> bool:
        """Whether the run's steps come from printed positions (counters or bars), not from lines."""
        return self.steps.last is not None or bool(self.bars.bars)

    def _trainer_line(self, parsed: Parsed) -> None:
        """An HF Trainer dict: at the count of the bar redrawn right after it; without a bar, next."""
        if parsed.where.epoch is not None:
            self.steps.epoch = parsed.where.epoch
        step = self.redraws.line((parsed, self._where(parsed)))
        if step is not None:
            self.out.emit(step, parsed, self._where(parsed))
        elif self.redraws.barless(bool(self.bars.bars)):
            self._count(self.redraws.rest())

    def _unplaced(self, lines: list[tuple[Parsed, dict[str, Any]]]) -> None:
        """Trainer lines the output ended before a redraw placed: counted if no bar ever came, else at
        the bar's last count."""
        if not self.bars.bars:
            self._count(lines)
            return
        for parsed, where in lines:
            self.out.emit(self.steps.step, parsed, where)

    def _count(self, lines: list[tuple[Parsed, dict[str, Any]]]) -> None:
        """Trainer lines without a bar to place them: a training line is the next step (a guess)."""
        for parsed, where in lines:
            self.steps.step += bool(parsed.step)
            self.out.emit(self.steps.step, parsed, where)

    def _flush(self) -> None:
        pending, self.pending = self.pending, None
        if pending and self.out.emitted is not None and pending.step <= self.out.emitted:
            pending.parsed.step.clear()  # a new bar's count 0 at the step the last one ended: written
        if pending:
            self.out.emit(pending.step, pending.parsed, pending.where)

    def _where(self, parsed: Parsed) -> dict[str, Any]:
        steps = self.steps
        return {k: v for k, v in (("epoch", steps.epoch), ("epochs", steps.epochs),
                                  ("rank", parsed.where.rank)) if v is not None}
