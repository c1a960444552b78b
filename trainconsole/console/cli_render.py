"""Plain-text rendering for the headless CLI: the runs table, event lines, and `--wait` progress."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any, TextIO

from trainconsole.protocol import Event, RunDir
from trainconsole.protocol.lost import stderr_cause
from trainconsole.protocol.run_row import status_label

if TYPE_CHECKING:
    from collections.abc import Sequence

    from trainconsole.protocol.index_file import Summary

#: Fields written for people (a failure's cause, a warning's message, their hints): never shortened.
WORDS = frozenset({"cause", "message", "hint"})
COLUMNS = ("id", "status", "strategy", "epoch", "step", "loss", "val_acc", "samples/s", "started", "size",
           "tags")


#: What `ls` says when it lists no run (what it was asked for has none; the home may hold others).
NO_RUNS = "no runs yet (start one with: trainconsole run --demo)"


def table(rows: list[dict[str, Any]], empty: str = NO_RUNS) -> str:
    """The `ls` table: one line per run, columns padded to fit; a host column when the home holds runs
    of more than one host. `empty` when there is no row."""
    if not rows:
        return empty
    hosts = len({row.get("host") for row in rows if row.get("host")}) > 1
    extra = [name for name, shown in (("host", hosts), ("slurm job", any(r.get("slurm") for r in rows)))
             if shown]
    header = (*COLUMNS, *extra)
    cells = [header] + [(*_cells(row), *(_extra_cell(row, name) for name in extra)) for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells)


def _cells(row: dict[str, Any]) -> tuple[str, ...]:
    from trainconsole.console.core.board import human_bytes  # (here: `ls --json` needs none of the board)

    last = row.get("last") or {}
    started = row.get("started_at")
    return (
        row["id"], status_cell(row), row.get("strategy") or "-", epoch_cell(last),
        _num(last.get("step")), _num(last.get("loss"), ".4g"), _num(last.get("val_acc"), ".3f"),
        _num(last.get("samples_per_s"), ".0f"),
        time.strftime("%m-%d %H:%M", time.localtime(started)) if started else "-",
        human_bytes(row["size"]) if isinstance(row.get("size"), int) else "-",
        " ".join(f"#{tag}" for tag in row.get("tags") or []) or "-",
    )


def _extra_cell(row: dict[str, Any], name: str) -> str:
    return (row.get("host") or "-") if name == "host" else slurm_cell(row.get("slurm"))


def slurm_cell(slurm: dict[str, Any] | None) -> str:
    """A Slurm run's job as squeue shows it: id, partition, nodes, time limit and time left
    (`12 debug n[1-2] 10:00 left 8:12`)."""
    if not slurm:
        return "-"
    parts = [str(slurm.get("job_id") or "?"), slurm.get("partition") or "", slurm.get("nodes") or ""]
    if slurm.get("time_limit"):
        parts.append(f"limit {slurm['time_limit']}")
    if slurm.get("time_left"):
        parts.append(f"left {slurm['time_left']}")
    return " ".join(p for p in parts if p)


def status_cell(row: dict[str, Any]) -> str:
    """The status, as the console's row shows it: `paused: disk full` for a run waiting for disk space;
    a Slurm run's reason (`queued: Resources`), and a controller that does not answer."""
    slurm = row.get("slurm") or {}
    if slurm.get("unreachable_since"):  # as last known
        since = time.strftime("%H:%M", time.localtime(slurm["unreachable_since"]))
        return f"{row['status']} (Slurm not answering since {since})"
    if slurm.get("reason") and row["status"] in ("queued", "killed", "failed", "stopped"):
        return f"{row['status']}: {slurm['reason']}"
    return status_label(row["status"], row.get("paused"))


def epoch_cell(last: dict[str, Any]) -> str:
    """`3/10`: the epoch and the epochs in all, as the console's row shows it (`3` if the total is not
    known, `-` before the first epoch)."""
    epoch, total = last.get("epoch"), last.get("epochs")
    if epoch is None:
        return "-"
    return f"{epoch}/{total}" if isinstance(total, int) else f"{epoch}"


def _num(value: Any, fmt: str = "") -> str:
    return "-" if value is None else format(value, fmt)


def lost_line(run: RunDir) -> str:
    """The last line `logs` prints for a lost run: that its process is gone, and what its stderr said."""
    cause = stderr_cause(run.path)
    said = f"; its stderr ends: {cause}" if cause else " (nothing on stderr)"
    return f"lost: the process is gone without a final event{said}"


def event_line(line: bytes) -> str:
    """One logged event as a readable line (or the raw text if it is not an event)."""
    try:
        event = json.loads(line)
        return describe(event)
    except (ValueError, TypeError, AttributeError):
        return line.decode(errors="replace")


def describe(event: Event) -> str:
    """A short human description of an event, prefixed with its local time."""
    stamp = time.strftime("%H:%M:%S", time.localtime(event.get("t", 0)))
    kind = event.get("type", "?")
    skip = {"v", "t", "run", "type", "mem", "traceback", "config", "layers"}
    fields = " ".join(f"{k}={_short(v, k in WORDS)}" for k, v in event.items()
                      if k not in skip and v not in ("", None))  # (`hint=` with nothing after says nothing)
    if isinstance(event.get("layers"), dict):  # a histogram event: its bins are for the console's view
        fields += f" layers={len(event['layers'])}"
    return f"{stamp} {kind:<10} {fields}".rstrip()


def _short(value: Any, whole: bool = False) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    return text if whole or len(text) <= 80 else text[:77] + "..."


def trial_line(event: Event) -> str:
    """A tune trial's state on one line: `trial #3 stopped_early @2  val_acc=0.91  lr=0.01 batch_size=64`."""
    metrics = "  ".join(f"{k}={_short(v)}" for k, v in (event.get("metrics") or {}).items())
    config = " ".join(f"{k}={_short(v)}" for k, v in (event.get("config") or {}).items())
    cause = f"  {event['cause']}" if event.get("cause") else ""
    return (f"  trial #{event.get('number', '?')} {event.get('status')} @{event.get('iteration', 0)}  "
            f"{metrics}  {config}{cause}").rstrip()


class Progress:
    """`run --wait` progress: a live line on a terminal, a line per epoch otherwise."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.live = out.isatty()

    def show(self, event: Event) -> None:
        """Render one event of the followed run."""
        kind = event.get("type")
        if kind == "step" and self.live:
            self.out.write(f"\r  epoch {event.get('epoch')} step {event.get('step')} "
                           f"loss {event.get('loss', 0):.4f}  {event.get('samples_per_s', 0):.0f} samples/s ")
            self.out.flush()
        elif kind == "trial" and event.get("status") not in ("running", "pending"):  # a trial's end
            self.out.write(("\r\033[K" if self.live else "") + trial_line(event) + "\n")
            self.out.flush()
        elif kind in ("started", "eval", "checkpoint", "warning", "failed", "finished", "stopped", "killed"):
            self.out.write(("\r\033[K" if self.live else "") + describe(event) + "\n")
            if kind == "failed" and event.get("hint"):
                self.out.write(f"  hint: {event['hint']}\n")
            self.out.flush()

    def close(self, status: str) -> None:
        """Finish the display with the run's final status."""
        self.out.write(("\r\033[K" if self.live else "") + f"run {status}\n")
        self.out.flush()


def json_rows(summaries: Sequence[Summary]) -> bytes:
    """`ls --json`: a JSON array of the summaries' rows, one per line (UTF-8), copied out of the run
    index's rows file as they lie there (`index_file.joined_rows`)."""
    from trainconsole.protocol.index_file import joined_rows

    return joined_rows(summaries)
