"""Lightning's CSVLogger `metrics.csv`, read exactly as it grows (stdlib only; Lightning is not needed).

CSVLogger writes `<save_dir>/<name>/version_N/metrics.csv`: a header of every key logged so far (sorted),
then one row per `log_metrics` call with `epoch` and `step` and empty cells for the keys not logged then.
It appends rows, and when a new key appears it rewrites the whole file under the longer header. Folders:
`lightning_logs/` in the directory the script runs in (the default) and `[script] csv_logs`; only files
written since the script started count. A row's training metrics are a `step` event at its step
(`train_loss` -> `loss`), `val_*` an `eval` event, `test_*` a `result` event; Lightning's `_step` suffix
is dropped, and an `_epoch` value (the epoch's mean) of a training metric is the epoch's `summary`.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainconsole.protocol.events import EVAL, RESULT, STEP, SUMMARY

from .file_tail import FileTail, Listings, complete_lines, signature
from .names import kind, name

FILE = "metrics.csv"
SOURCE = "lightning_csv"
#: Lightning names a value logged with both on_step and on_epoch `key_step` and `key_epoch`.
SUFFIX = re.compile(r"^(?P<key>.+)_(?P<when>step|epoch)$")
#: Where each kind of field goes: (event, per-epoch value of a training metric).
TARGETS = {("metric", False): STEP, ("metric", True): SUMMARY, ("val", False): EVAL, ("val", True): EVAL,
           ("test", False): RESULT, ("test", True): RESULT}
ORDER = (STEP, SUMMARY, EVAL, RESULT)


def field(key: str) -> tuple[str, bool]:
    """The event field for a CSV column, and whether it holds an epoch's value (`loss_epoch`)."""
    suffixed = SUFFIX.match(key)
    if suffixed and kind(name(suffixed["key"])) in ("metric", "val", "test", "timing"):
        return name(suffixed["key"]), suffixed["when"] == "epoch"
    return name(key), False


def row_events(row: dict[str, str]) -> list[tuple[str, dict[str, Any]]]:
    """The events of one CSV row (column -> cell): (kind, fields), in the order they are written."""
    values = {k: float(v) for k, v in row.items() if k and _number(v)}
    step, epoch = values.pop("step", None), values.pop("epoch", None)
    if step is None:
        return []
    where: dict[str, Any] = {"step": int(step)}
    if epoch is not None:
        where["epoch"] = int(epoch) if epoch == int(epoch) else epoch
    grouped: dict[str, dict[str, Any]] = {}
    timing: dict[str, float] = {}
    for key, value in values.items():
        field_name, per_epoch = field(key)
        where_to = kind(field_name)
        if where_to == "timing":
            timing[field_name] = value
        elif (where_to, per_epoch) in TARGETS:
            grouped.setdefault(TARGETS[(where_to, per_epoch)], {})[field_name] = value
    events = [(k, {**where, **grouped[k], "source": SOURCE}) for k in ORDER if k in grouped]
    if events and timing:
        events[0][1]["timing"] = timing
    return events


@dataclass
class CsvFile:
    """How far one metrics.csv was read: its header, the byte offset after the last whole row, the rows
    read under this header (a rewrite starts over) and the rows already emitted (never emitted twice)."""

    header: bytes = b""
    offset: int = 0
    rows: int = 0
    emitted: int = 0
    seen: tuple[int, float] | None = None

    def read(self, path: Path) -> list[dict[str, str]]:
        """The rows not emitted yet (the file is rewritten whole when its header grows)."""
        try:
            with open(path, "rb") as f:
                header = f.readline()
                if not header.endswith(b"\n"):
                    return []  # the header is being written
                if header != self.header or f.seek(0, 2) < self.offset:  # new, rewritten or truncated
                    self.header, self.offset, self.rows = header, len(header), 0
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return []
        lines, used = complete_lines(data)
        self.offset += used
        columns = next(csv.reader([self.header.decode("utf-8", "replace")]))
        new = []
        for cells in csv.reader(lines):
            self.rows += 1
            if self.rows > self.emitted:
                new.append(dict(zip(columns, cells, strict=False)))  # a short row: the cells it has
        self.emitted = max(self.emitted, self.rows)
        return new


class LightningCsvTail(FileTail):
    """Polls the folders for metrics.csv files and emits their new rows, until `finish()`."""

    def __init__(self, folders: list[Path], since: float, emit: Callable[..., Any]) -> None:
        super().__init__("lightning-csv-tail")
        self.folders, self.since, self.emit = folders, since, emit
        self.files: dict[Path, CsvFile] = {}
        self.listings = Listings()

    def poll(self) -> None:
        """Read the rows every file grew by, file by file, and emit their events."""
        for path in self._new_files():
            self.files[path] = CsvFile()
        for path, state in self.files.items():
            seen = signature(path)
            if seen is None or seen == state.seen:
                continue  # unchanged: one stat
            state.seen = seen
            for row in state.read(path):
                for event, fields in row_events(row):
                    self.emit(event, **fields)

    def _new_files(self) -> list[Path]:
        found = []
        for folder in self.folders:
            for path in map(Path, self.listings.files(str(folder), FILE)):
                seen = signature(path)
                if path not in self.files and seen is not None and seen[1] >= self.since - 1.0:
                    found.append(path)
        return found


def _number(cell: str | None) -> bool:
    try:
        float(cell)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    return True
