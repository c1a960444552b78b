"""A Python traceback in a script's stderr, turned into the cause and hint of a `failed` event (stdlib only).

The cause is the exception line that ends the last traceback, skipping the wrappers torch's elastic agent
raises around a failed rank (its own traceback comes after the rank's). Hints follow the built-in runs'
(guards.py markers: out of memory, shapes, labels, NaN), worded for a script rather than a config.
"""

from __future__ import annotations

import re
from collections import deque

from trainers.guards import LABEL_MARKERS, OOM_MARKERS, SHAPE_MARKERS

START = "Traceback (most recent call last):"
#: The exception line: the first unindented line after "Traceback ...", `[module.]Type[: message]`.
EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?(?P<type>[A-Za-z_]\w*)(?::|$)")
WRAPPERS = ("ChildFailedError", "SignalException")
#: torchrun prefixes each line of a rank's output with its rank.
RANK_PREFIX = re.compile(r"^\[(?:default)?rank\d+\]:\s?")
TAIL_LINES = 15
CAUSE_LIMIT = 300

HINTS = (
    (("OutOfMemoryError", "MemoryError", *OOM_MARKERS),
     "out of memory: lower the batch size, use bf16/fp16 autocast, or a smaller model or image size"),
    (SHAPE_MARKERS, "a shape mismatch: check the number of classes, image size and channels against "
                    "what the model expects"),
    (LABEL_MARKERS, "a label is outside [0, num_classes): check the model's number of classes against "
                    "the dataset; on CUDA rerun with CUDA_LAUNCH_BLOCKING=1"),
    (("NaN", "non-finite", "loss is nan", "loss is inf"),
     "the loss became NaN or infinite: lower the learning rate, try bf16 instead of fp16, check the data"),
    (("ModuleNotFoundError",), "make the module importable (pip install it, or fix PYTHONPATH)"),
    (("FileNotFoundError",), "check the script's paths: it runs in the directory `run` was called from"),
    (("SIGKILL",), "killed from outside: often the kernel's out-of-memory killer (see dmesg)"),
)


class TracebackWatch:
    """Fed stderr lines one at a time; remembers the last traceback and the exception that ended it."""

    def __init__(self) -> None:
        self.lines: deque[str] = deque(maxlen=TAIL_LINES)
        self.cause: str | None = None
        self.tail: list[str] = []
        self.in_traceback = False

    def feed(self, line: str) -> None:
        """Take one line (without its newline)."""
        line = RANK_PREFIX.sub("", line)
        if line.startswith(START):
            self.in_traceback = True
            self.lines.clear()
        if not self.in_traceback:
            return
        self.lines.append(line)
        if line.startswith((START, " ", "\t")) or not line.strip():
            return
        self.in_traceback = False
        match = EXCEPTION_LINE.match(line)
        if match and (match["type"] not in WRAPPERS or self.cause is None):
            self.cause, self.tail = _cut(line.strip()), list(self.lines)

    @property
    def traceback(self) -> str:
        """The last lines of the traceback that gave the cause."""
        return "\n".join(self.tail)


def hint(cause: str) -> str:
    """A short hint for a cause line ('' when there is no good guess)."""
    return next((text for markers, text in HINTS if any(m in cause for m in markers)), "")


def _cut(text: str) -> str:
    return text if len(text) <= CAUSE_LIMIT else text[: CAUSE_LIMIT - 1] + "…"
