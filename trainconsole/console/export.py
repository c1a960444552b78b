"""Export: a run's metrics as flat rows (pure: events in, rows out), and the CSV and JSON-lines text of
rows, for `trainconsole export` and `ls --csv`.

Every `step` event is a row (`--every step`), or one row per epoch (`--every epoch`): the epoch's last
step with the epoch's evaluation merged in. Memory is the host RSS and the device memory in use, summed
over the devices, in bytes.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from typing import Any

from trainconsole.protocol import Event

METRICS = ("run", "tags", "step", "epoch", "time", "loss", "val_loss", "val_acc", "lr", "samples_per_s",
           "host_rss", "device_allocated")
LS_COLUMNS = ("id", "name", "kind", "strategy", "status", "host", "started_at", "ended_at", "epoch", "step",
              "loss", "val_acc", "val_loss", "samples_per_s", "size", "tags", "note")


def metric_rows(run_id: str, tags: list[str], events: Iterable[Event],
                every: str = "step") -> list[dict[str, Any]]:
    """A run's metrics, one row per step event (or per epoch), with its id and tags."""
    rows: list[dict[str, Any]] = []
    by_epoch: dict[Any, dict[str, Any]] = {}
    for event in events:
        kind = event.get("type")
        if kind == "step":
            mem = event.get("mem") or {}
            row = {"run": run_id, "tags": " ".join(tags), "step": event.get("step"),
                   "epoch": event.get("epoch"), "time": event.get("t"), "loss": event.get("loss"),
                   "lr": event.get("lr"), "samples_per_s": event.get("samples_per_s"),
                   "host_rss": mem.get("rss"),
                   "device_allocated": sum(d.get("allocated", 0) for d in mem.get("devices") or []) or None}
            rows.append(row)
            by_epoch[row["epoch"]] = row
        elif kind == "eval" and event.get("epoch") in by_epoch:
            by_epoch[event["epoch"]].update(val_loss=event.get("val_loss"), val_acc=event.get("val_acc"))
    rows = list(by_epoch.values()) if every == "epoch" else rows
    return [{k: row.get(k) for k in METRICS} for row in rows]


def ls_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """`ls` rows flattened for a table: the latest metrics beside the run's facts, tags space-separated."""
    flat = []
    for row in rows:
        last = row.get("last") or {}
        out = {k: row.get(k, last.get(k)) for k in LS_COLUMNS}
        out["tags"] = " ".join(row.get("tags") or [])
        flat.append(out)
    return flat


def to_csv(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> str:
    """Rows as CSV with a header line (empty cells for missing values)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def to_json_lines(rows: list[dict[str, Any]]) -> str:
    """Rows as JSON lines, one object per line."""
    return "".join(json.dumps(row) + "\n" for row in rows)
