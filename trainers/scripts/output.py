"""A script's output: copied to the run's logs as it is flushed, and read line by line into events.

`Pump` is a plain thread per pipe (stdout, stderr): it writes each chunk to its log at once and hands the
lines (a `\\r`, tqdm's refresh, ends a state of the line; `\\n` ends the line) to `OutputEvents`, which
turns metric lines into `step` / `eval` events and watches stderr for a traceback. Everything happens
outside the script's process, so the script runs at full speed (it only blocks if the pipe fills, i.e. if
we fall behind).
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from trainers.protocol import EventWriter
from trainers.troubles.leaks import LeakWatch

from .lines import compile_patterns, parse
from .tracebacks import TracebackWatch

CHUNK = 1 << 16
#: A "line" longer than this without a newline is handed over in parts, each a line.
MAX_LINE = 1 << 16
LINE_END = re.compile(rb"[\r\n]")
#: Where a key may begin (as `lines.KEY_VALUE` reads keys): a long line is cut before one.
WORD_START = re.compile(rb"(?<![\w./-])[A-Za-z]")
NUMBER_TAIL = b"0123456789.eE+-"
#: tqdm's count in a progress bar: ` 25/50 [00:01<00:01, ...`.
PROGRESS = re.compile(r"(?<![\d.])(?P<n>\d+)/(?P<total>\d+)\s*\[")
#: An outer bar counting epochs (`epoch 1/3 [`, `Epochs:  33%|###  | 1/3 [`).
EPOCH_BAR = re.compile(r"\bepochs?\b", re.IGNORECASE)
#: Step events (printed metric lines) before the leak watch judges the script's memory.
LEAK_WARMUP_STEPS = 10


class Pump(threading.Thread):
    """Copies one pipe to a log descriptor and hands each line to `on_line(text, final)`.

    A `\r` (tqdm's refresh) ends a state of the line, not the line: every state is handed over with
    `final` False, and the text before the `\n` with `final` True. A line longer than MAX_LINE is handed
    over in parts, each a line of its own, cut before a key, never between a key and its value or inside a
    number.
    """

    def __init__(self, pipe_fd: int, log_fd: int, on_line: Callable[[str, bool], None]) -> None:
        super().__init__(daemon=True, name=f"pump-{pipe_fd}")
        self.pipe_fd, self.log_fd, self.on_line = pipe_fd, log_fd, on_line

    def run(self) -> None:
        """Until the pipe closes: copy, split, hand over."""
        pending = b""
        while chunk := _read(self.pipe_fd):
            _write_all(self.log_fd, chunk)
            pending += chunk
            start = 0
            for end in LINE_END.finditer(pending):
                self._hand(pending[start:end.start()], final=end.group() == b"\n")
                start = end.end()
            pending = pending[start:]
            while len(pending) > MAX_LINE:
                cut = _cut(pending)
                self._hand(pending[:cut], final=True)  # a part, not a state: its metrics count
                pending = pending[cut:]
        self._hand(pending, final=True)

    def _hand(self, line: bytes, final: bool) -> None:
        if line or final:
            self.on_line(line.decode(errors="replace"), final)


def _cut(text: bytes) -> int:
    """Where to cut a line longer than MAX_LINE: before the last key that begins before the limit; without
    one, before the number the limit falls in; else at the limit."""
    starts = [m.start() for m in WORD_START.finditer(text, 1, MAX_LINE)]
    if starts:
        return starts[-1]
    return len(text[:MAX_LINE].rstrip(NUMBER_TAIL)) or MAX_LINE


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, CHUNK)
    except OSError:
        return b""


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view):]
        except OSError:
            return  # the log is gone (disk full, deleted): keep reading, or the script blocks


@dataclass
class Bar:
    """A progress bar being drawn on one stream: the step before it, its total and the count last drawn."""

    base: int
    total: int
    n: int

    def goes_on(self, n: int, total: int) -> bool:
        """Whether `n/total` is this bar drawn again (a new bar starts over, or has another total)."""
        return total == self.total and n >= self.n


class OutputEvents:
    """Turns the script's printed lines into events (thread-safe: both pumps call it)."""

    def __init__(self, writer: EventWriter, patterns: list[str], parse_output: bool = True,
                 memory: Callable[[], dict[str, Any] | None] = lambda: None,
                 mem_interval: float = 1.0) -> None:
        self.writer = writer
        self.patterns = compile_patterns(patterns)
        self.parse_output = parse_output
        self.memory = memory
        self.watch = TracebackWatch()
        self.epoch: int | None = None
        self.step = 0
        self.bars: dict[tuple[str, int], Bar] = {}  # per stream and total, a progress bar's count
        self.metric_bars: dict[str, int] = {}  # per stream, the total of the bar that shows metrics
        self.emitted: int | None = None  # the step of the last step event
        self.states: dict[str, str] = {}  # per stream, the current line's last refreshed state
        self.best_val_acc: float | None = None
        self.last_error = ""
        self.lock = threading.Lock()
        self.mem_due, self.mem_interval = 0.0, mem_interval
        self.leaks = LeakWatch(warmup_steps=LEAK_WARMUP_STEPS)

    def stdout(self, line: str, final: bool = True) -> None:
        """One line the script printed to stdout (`final` False: a state that a `\r` refreshes)."""
        with self.lock:
            self._metrics(line, final, "stdout")

    def stderr(self, line: str, final: bool = True) -> None:
        """One line on stderr: metrics too (logging and tqdm write there), and the traceback watch."""
        with self.lock:
            if final:
                self.watch.feed(line)
                self.last_error = line.strip() or self.last_error
            self._metrics(line, final, "stderr")

    def _metrics(self, line: str, final: bool, stream: str) -> None:
        if not self.parse_output:
            return
        if final and not line.strip() and self.states.get(stream):
            line = self.states[stream]  # `text\r\n`: the line's last state is the line
        self.states[stream] = "" if final else line
        counter = PROGRESS.search(line)
        if not (final or counter):
            return  # a refreshed state without a counter: only the line's last state counts
        parsed = parse(line, self.patterns)
        self.epoch = parsed.context.get("epoch", self.epoch)
        if "step" in parsed.context:
            self.step = parsed.context["step"]
        elif counter and self._outer(stream, line, int(counter["total"]), bool(parsed.step)):
            self._outer_bar(line, int(counter["n"]), int(counter["total"]))
        elif counter:  # a progress bar: its count within the bar, after the steps before the bar
            self.step = self._bar_step(stream, int(counter["n"]), int(counter["total"]))
            if self.step == self.emitted:
                parsed.step.clear()  # the same state drawn again (tqdm's close redraws the last one)
        elif parsed.step:
            self.step += 1
        if parsed.step:
            self.emitted = self.step
        where = {"step": self.step, **({"epoch": self.epoch} if self.epoch is not None else {})}
        if parsed.step:
            mem = self._mem()
            self.writer.emit("step", **where, **parsed.step, **mem)
            leak = self.leaks.observe(self.step, mem["mem"]) if mem else None
            if leak:
                self.writer.emit("warning", **leak)
        if parsed.eval:
            self.writer.emit("eval", **where, **parsed.eval)
            acc = parsed.eval.get("val_acc")
            if acc is not None and (self.best_val_acc is None or acc > self.best_val_acc):
                self.best_val_acc = acc

    def _outer(self, stream: str, line: str, total: int, shows_metrics: bool) -> bool:
        """Whether a counter is an outer bar of nested ones (`for epoch in tqdm(...)` around a bar of the
        batches): one without metrics that counts epochs, or while another bar of the stream shows the
        metrics. It does not move the step (the inner bar's count goes on across epochs)."""
        if shows_metrics:
            self.metric_bars[stream] = total
            return False
        return bool(EPOCH_BAR.search(line)) or self.metric_bars.get(stream, total) != total

    def _outer_bar(self, line: str, n: int, total: int) -> None:
        if EPOCH_BAR.search(line):  # "epochs: 1/3": one epoch done, the second under way
            self.epoch = min(n + 1, total)

    def _bar_step(self, stream: str, n: int, total: int) -> int:
        # A bar is known by its counter, not by its line: a line printed between two of its states
        # (tqdm.write) or a state on a line of its own (Keras, a log file) does not start a new bar.
        bar = self.bars.get((stream, total))
        if bar is None or not bar.goes_on(n, total):
            bar = self.bars[(stream, total)] = Bar(base=self.step, total=total, n=n)
        bar.n = n
        return bar.base + n

    def _mem(self) -> dict[str, Any]:
        # Sampling the process tree costs a few ms: at most once a second.
        now = time.monotonic()
        if now < self.mem_due:
            return {}
        self.mem_due = now + self.mem_interval
        mem = self.memory()
        return {"mem": mem} if mem else {}
