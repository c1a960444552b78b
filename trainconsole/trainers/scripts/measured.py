"""A script run measured by its probe: the probe's records, and each printed line with its stamp.

`Measured.take` is handed each line the pumps read. A line's stamp (the step, epoch and phase the probe saw
when the script wrote it) is found on the channel; the text readers then only name the line's metrics.
The run's main process is the first to make an optimizer step (rank 0 under torchrun); other processes'
lines (workers, other ranks) never mix into its series. A line of the main process waits until a later
step is known: printed while training, it is a step's metrics (or an evaluation's, in eval mode or
without grad, or after a module went into eval mode since the last step); printed after the last step, a
result. Lines before the first step wait too: an evaluation's are at step 0, the rest (a config dump) are
no metrics. Where no process makes a step within EARLY_S (hand-written updates, Keras, JAX), the text
readers read everything as before.
"""

from __future__ import annotations

import math
import os
import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainconsole.protocol import EventWriter
from trainconsole.protocol.events import EVAL, RESULT, SOURCE_TEXT, STEP, SUMMARY

from .bars import PROGRESS
from .formats import read
from .inject._trainconsole_probe import R
from .names import name
from .parsed import Parsed
from .probe_channel import ProbeChannel
from .probe_events import ProbeFigures
from .tables import Tables

#: How long lines before any optimizer step wait for one before the text readers take them.
EARLY_S = 60.0
#: How long a step record waits at most for the lines printed before it (their text still in the pipe).
HOLD_S = 2.0
#: How many of a stream's stamps a line is looked for among (oldest first).
WINDOW = 64
HEAD = 80
TORN_HEAD = 16
SPLITS = ("train_", "val_", "test_", "eval_")
TRAIN_SPLIT = re.compile(r"\btrain(?:ing)?\b", re.IGNORECASE)
EVAL_SPLIT = re.compile(r"\b(?:val|valid|validation|test|dev)\b", re.IGNORECASE)
TEST_SPLIT = re.compile(r"\btest(?:\b|_)", re.IGNORECASE)
#: A training loss that sums up an epoch (`===> Epoch 3 Complete: Avg. Loss: 0.0123`): its `summary`.
EPOCH_SUMMARY = re.compile(r"\b(?:avg|average|mean)\b|\bepoch\s*\d+\s*(?:complete|completed|done|finished)\b|"
                           r"\bend of epoch\b", re.IGNORECASE)
#: A line of a position and a number alone, printed while training (`99 0.53`): the loss at that step.
POSITION_LOSS = re.compile(r"^\s*\d+\s+([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*$")
#: The probe's names of the two streams.
STREAMS = {"stdout": "o", "stderr": "e"}


@dataclass
class Stamp:
    """Where a line was written: by which process, at which step, epoch and phase."""

    pid: int
    head: str
    step: int
    epoch: int | None
    phase: str
    evaluated: bool = False  # a DataLoader other than the training one was iterated since the last step


class Measured:
    """The probe's view of a script run, and the events it gives."""

    def __init__(self, writer: EventWriter, folder: Path, patterns: list[Any], epochs: int | None,
                 text: Callable[[str, str], None]) -> None:
        self.writer, self.patterns, self.text = writer, patterns, text
        self.channel = ProbeChannel(folder)
        self.figures = ProbeFigures(writer, epochs)
        self.ranks: dict[int, str | None] = {}
        self.rank_errors: dict[int, str] = {}  # rank -> the exception that ended it (torchrun's ranks)
        self.steps: dict[int, int] = {}  # each process's last known step
        self.stamps: dict[str, deque[Stamp]] = {"o": deque(maxlen=4096), "e": deque(maxlen=4096)}
        self.main: int | None = None
        # the metrics the script sends through `report()`: its printed copies are left out (a structured
        # log's `loss` is left out of the probe's step events only, never out of the printed lines)
        self.reported: set[str] = set()
        self.held: list[tuple[str, Stamp]] = []  # the main process's lines, waiting for a later step
        # the main process's step records (when they came), waiting for the lines printed before them
        self.waiting: deque[tuple[float, dict[str, Any]]] = deque()
        self.torn: dict[str, str] = {}  # per stream, a torn line's first part, waiting for its newline
        self.early: list[tuple[str, str, Stamp]] = []  # (stream, text, stamp) before any step
        self.early_since = 0.0
        self.text_only = False  # no step came: the text readers read everything
        self.best_val_acc: float | None = None
        self.evaluated = False  # after the last step, an evaluation came: what follows are results
        self.eval_names: set[str] = set()  # the names of the evaluations written while training
        self.tables = Tables()  # a table's header: its rows' values under their columns' names

    @property
    def active(self) -> bool:
        """Whether the probe places the run's lines (a process made an optimizer step)."""
        return self.main is not None

    def poll(self) -> None:
        """Read the channel; write the lines a later step placed."""
        for pid, record in self.channel.read():
            self._record(pid, record)
        if self.main is not None:
            self._release(after=False)
            self._flush_ready()
        elif self.early and time.monotonic() - self.early_since > EARLY_S:
            self._text_only()

    def take(self, stream: str, line: str, final: bool) -> bool:
        """Whether the probe takes LINE (False: the text readers read it as before)."""
        if self.text_only:
            return False
        self.poll()
        key = STREAMS.get(stream, "")
        if final and not line and key in self.torn:  # the newline that ends a torn line's first part
            line = self.torn.pop(key)
        elif final:
            first, stamped, line = self._torn(key, line)
            if first and stamped:
                self.take(stream, first, final)
            elif first:  # its stamp comes with its own newline: the empty line after this one
                self.torn[key] = first
            line, rest = self._ended_first(key, line)
            if rest:  # another process's text, whose newline (and stamp) comes next: that empty line
                self.torn[key] = rest
        stamp = self._match(key, line) if final else None
        if stamp is None:
            return self.active  # another program's line, or a bar's state: the probe has the figures
        if not line.startswith(stamp.head):  # torn: another process's text came first on the line
            line = line[line.index(stamp.head):]
        if self.main is None:
            self.early.append((stream, line, stamp))
            self.early_since = self.early_since or time.monotonic()
        elif stamp.pid == self.main:
            self.held.append((line, stamp))
            self._release(after=False)
        elif not self.steps.get(stamp.pid):  # a process that never trains (the parent of mp workers)
            self._emit(line, Stamp(stamp.pid, stamp.head, self.steps.get(self.main, 0), stamp.epoch,
                                   stamp.phase), after=not _alive(self.main))
        return True

    def close(self) -> None:
        """The output ended: lines after the last step are results; without a step, the text readers'."""
        self.poll()
        if self.main is None:
            self._text_only()
            return
        self._release(after=False)
        self._flush(math.inf)
        self._release(after=True)

    def _record(self, pid: int, record: dict[str, Any]) -> None:
        kind, step = record.get(R.KIND), int(record.get(R.AT) or 0)
        self.steps[pid] = max(self.steps.get(pid, 0), step)
        if kind == R.EXIT and record.get(R.ERROR) and str(self.ranks.get(pid)).isdigit():
            self.rank_errors[int(str(self.ranks[pid]))] = str(record[R.ERROR])
        if kind == R.HELLO:
            self.ranks[pid] = record.get(R.RANK)
        elif kind == R.LINE and record.get(R.STREAM) in self.stamps:
            self.stamps[record[R.STREAM]].append(Stamp(pid, record.get(R.TEXT_HEAD, ""), step,
                                                       record.get(R.EPOCH), record.get(R.PHASE, "train"),
                                                       bool(record.get(R.EVALUATED))))
        elif kind in (R.STEP, R.STEPPED) and step and self.main is None and not self.text_only \
                and self.ranks.get(pid) in (None, "0"):
            self._take_over(pid)
        elif kind == R.NONFINITE:
            who = "" if pid == self.main else f" (process {pid}, rank {self.ranks.get(pid)})"
            self.figures.nonfinite(record, who if self.ranks.get(pid) not in (None, "0") else "")
        elif kind == R.EXIT and self.main in (None, pid):
            self.figures.exit = record
        elif kind == R.REPORTS:  # the script reports these itself (`report()`): its figures are the ones
            self.reported = set(record.get(R.NAMES) or ())
            self.figures.own = set(self.reported)
        if kind == R.STEP and pid == self.main:
            self.waiting.append((time.monotonic(), record))

    def _take_over(self, pid: int) -> None:
        """PID made the run's first step: its earlier evaluations are at step 0, its lines printed since a
        step (before its first record came) are held as any, other early lines go."""
        self.main = pid
        for _, line, stamp in self.early:
            if stamp.pid == pid and stamp.step:
                self.held.append((line, stamp))
            elif stamp.pid == pid and stamp.phase == "eval":
                self._emit(line, stamp, after=False)
        self.early = []

    def _text_only(self) -> None:
        self.text_only = True
        early, self.early = self.early, []
        for stream, line, _ in early:
            self.text(stream, line)

    def _torn(self, stream: str, line: str) -> tuple[str, bool, str]:
        """(first part, stamped yet, the rest) of a line another process wrote a whole line into (`A-text`,
        `B-text\n`, `\n` on one pipe: A's text, then B's line); ("", False, LINE) for a whole line. The cut
        is where a stamped line of another process begins; heads shorter than TORN_HEAD are not looked for
        inside a line."""
        stamps = self.stamps.get(stream)
        if not stamps:
            return "", False, line
        window = list(stamps)[:WINDOW]
        lead = next((s for s in window if s.head and line.startswith(s.head)), None)
        start = len(lead.head) if lead else 1
        cuts = [line.find(s.head, start) for s in window
                if len(s.head) >= TORN_HEAD and (lead is None or s.pid != lead.pid)]
        at = min((i for i in cuts if i > 0), default=0)
        return (line[:at], lead is not None, line[at:]) if at else ("", False, line)

    def _ended_first(self, stream: str, line: str) -> tuple[str, str]:
        """(LINE, ""), or (a process's whole line, another's text after it) where the newline read was the
        first process's and the other's comes later (`A-text`, `B-text`, `\n`, `\n` on one pipe, read
        before B's stamp came): a stamp's head shorter than HEAD is its whole line, so what follows it on
        the line is another process's. A line with a stamp of its very head is whole."""
        stamps = self.stamps.get(stream)
        if not stamps or len(line) <= TORN_HEAD:
            return line, ""
        window, head = list(stamps)[:WINDOW], line[:HEAD]
        if any(s.head == head for s in window):
            return line, ""
        lead = next((s for s in window if TORN_HEAD <= len(s.head) < min(HEAD, len(line))
                     and line.startswith(s.head)), None)
        return (line[:len(lead.head)], line[len(lead.head):]) if lead else (line, "")

    def _match(self, stream: str, line: str) -> Stamp | None:
        """The oldest stamp of STREAM whose head is the line's; earlier stamps of its process are gone."""
        stamps, head = self.stamps.get(stream), line[:HEAD]
        if not stamps:
            return None
        window = list(stamps)[:WINDOW]
        found = next((i for i, s in enumerate(window) if s.head == head), None)
        if found is None:  # a line two processes wrote into at once: the stamp of the one that ended it
            found = next((i for i, s in enumerate(window) if s.head and s.head in line), None)
        for i, stamp in enumerate(window):
            if i == found:
                kept = [s for s in list(stamps)[:i] if s.pid != stamp.pid]
                for _ in range(i + 1):
                    stamps.popleft()
                stamps.extendleft(reversed(kept))
                return stamp
        return None

    def _release(self, after: bool) -> None:
        """Write the held lines a later step placed; AFTER (the output ended): the rest, the last step's
        training lines as such, and from its first evaluation on, results."""
        known = self.steps.get(self.main or 0, 0)
        while self.held and (after or self.held[0][1].step < known):
            line, stamp = self.held.pop(0)
            self._emit(line, stamp, after and self._result(line, stamp))

    def _flush(self, upto: float) -> None:
        """Write the step records up to step UPTO (and those held HOLD_S): a printed line joins the step it
        was printed at, after its record, and the log's steps never go back."""
        stale = time.monotonic() - HOLD_S
        while self.waiting and (int(self.waiting[0][1].get(R.AT) or 0) <= upto or self.waiting[0][0] < stale):
            self.figures.record(self.waiting.popleft()[1])

    def _flush_ready(self) -> None:
        """Write the step records no line still to come was printed before: up to the step of the oldest
        line of the main process not yet written (held, or stamped with its text still in the pipe)."""
        if self.waiting:
            stamped = (s.step for stamps in self.stamps.values() for s in stamps if s.pid == self.main)
            self._flush(min((*(s.step for _, s in self.held), *stamped), default=math.inf))

    def _result(self, line: str, stamp: Stamp) -> bool:
        """Whether a line printed after the last step is a result: from the first evaluation's figures
        that the script did not evaluate while training (other names, or a split called test) on. The
        script's validation again (same names) is an evaluation, as each before it was."""
        if self.evaluated or stamp.phase != "eval":
            return self.evaluated
        parsed = self._read(line, evaluating=True, after=False)
        names = {*parsed.eval, *parsed.result}
        self.evaluated = bool(names) and (not names <= self.eval_names or bool(TEST_SPLIT.search(line)))
        return self.evaluated

    def _read(self, line: str, evaluating: bool, after: bool) -> Parsed:
        """What a line says (a table's row under its header's names). A bar ended while evaluating (by
        another bar's newline, or a bar over the evaluation's batches): its running figures are progress;
        only those named for their split (`val_loss=`) are kept."""
        bar = evaluating and bool(PROGRESS.search(line))
        parsed = read(self.tables.named(line), self.patterns, evaluating and not bar, trained=after)
        if bar:
            parsed.step.clear()
        return parsed

    def _emit(self, line: str, stamp: Stamp, after: bool) -> None:
        """A line's metrics at its stamp: a step's, an evaluation's, or (AFTER training) a result."""
        self._flush(stamp.step)
        evaluating = stamp.phase == "eval"
        parsed = self._read(line, evaluating, after)
        pair = None if parsed.metrics or after else POSITION_LOSS.match(line)
        if pair:  # `99 0.53` (a hand-written update's `print(t, loss.item())`): the probe has the step
            parsed.step["loss"] = float(pair.group(1))
        epoch = stamp.epoch or parsed.where.epoch  # printed, where no DataLoader gave the probe one
        where = {"step": stamp.step, **({"epoch": epoch} if epoch is not None else {}), "source": SOURCE_TEXT}
        timing = {"timing": parsed.timing} if parsed.timing else {}
        train_split = evaluating and bool(TRAIN_SPLIT.search(line)) and not EVAL_SPLIT.search(line)
        if after:
            kinds = {RESULT: {**parsed.step, **parsed.eval, **parsed.result}}
        elif evaluating and _named(parsed):  # `loss 0.9 val_loss 0.8`: the epoch's train loss, its summary
            kinds = {SUMMARY: parsed.step, EVAL: {**parsed.eval, **parsed.result}}
        elif evaluating:  # during training, a test split is evaluated as a validation is
            kinds = {EVAL: {**parsed.eval, **parsed.result, **{_split(k): v for k, v in parsed.step.items()}}}
        else:  # training: the probe knows more steps came, so nothing is a result yet (`| test accuracy`
            # is an evaluation at this step), and a `train loss` beside it is the step's own
            trained = {name(k): v for k, v in parsed.eval.items() if k.startswith("train_")}
            averaged = any("loss" in k for k in parsed.step) and bool(EPOCH_SUMMARY.search(line))
            summary = _named(parsed) or averaged  # (the probe's own step events carry each step's loss)
            kinds = {SUMMARY if summary else STEP: {**parsed.step, **trained},
                     EVAL: {**{k: v for k, v in parsed.eval.items() if not k.startswith("train_")},
                            **parsed.result}}
        for kind, fields in kinds.items():
            if train_split:  # `Train set: loss 0.3` in eval mode: what the script calls train stays train
                fields = {_train(k): v for k, v in fields.items()}
            fields = {k: v for k, v in fields.items() if k not in self.reported}  # report()'s are the ones
            if fields:
                self.writer.emit(kind, **where, **fields, **timing)
                timing = {}
            self.eval_names |= fields.keys() if kind == EVAL else set()
            acc = fields.get("val_acc") if kind == EVAL else None
            if acc is not None and (self.best_val_acc is None or acc > self.best_val_acc):
                self.best_val_acc = acc


def _alive(pid: int) -> bool:
    """Whether the process still runs (mp workers end with os._exit: no last record says so)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _named(parsed: Parsed) -> bool:
    """Whether a line names its evaluation's split beside training figures (`loss 0.9 val_acc 0.8`): the
    training's are then the epoch's summary, never a second loss at the step."""
    return bool(parsed.step) and any(k.startswith(("val_", "test_")) for k in (*parsed.eval, *parsed.result))


def _train(key: str) -> str:
    """`val_loss` or `test_loss` of a line that names the training split alone: `train_loss`."""
    for prefix in SPLITS:
        if key.startswith(prefix):
            return "train_" + key[len(prefix):]
    return "train_" + key


def _split(key: str) -> str:
    """A metric printed while evaluating: the validation's, unless it names its split (`train_loss`)."""
    return key if key.startswith(SPLITS) else "val_" + key
