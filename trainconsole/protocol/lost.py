"""What a lost run's stderr says: its last words are the likeliest cause (an import error at start, a
signal, the OOM killer's `Killed`), shown by `logs` and the console's log pane. Stdlib only."""

from __future__ import annotations

import os
import re
from pathlib import Path

#: How much of the end of stderr.log is read.
TAIL_BYTES = 16 << 10
#: An exception's line at the end of a traceback: `ModuleNotFoundError: No module named 'x'`.
EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit|Warning)\b(:.*)?$")


def stderr_cause(run_path: str | os.PathLike[str], limit: int = 300) -> str:
    """The cause a run's stderr.log ends with: the last exception line if there is one, else its last
    line ('' when it is empty or unreadable)."""
    try:
        with open(Path(run_path) / "stderr.log", "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - TAIL_BYTES))
            text = f.read().decode(errors="replace")
    except OSError:
        return ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return ""
    cause = next((line for line in reversed(lines) if EXCEPTION.match(line)), lines[-1])
    return cause if len(cause) <= limit else cause[: limit - 3] + "..."
