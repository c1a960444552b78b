"""JSON lines printed by a script (`print(json.dumps({"step": 10, "loss": 0.5}))`), read exactly (pure).

A line that is one JSON object of numbers: `step` / `global_step` / `iter` is the step as stated, `epoch`
the epoch, `val_*` / `eval_*` an evaluation, `test_*` a result, times and rates `timing`, the rest metrics.
Nested objects and non-numbers are left out. A line without a metric or a step says nothing.
"""

from __future__ import annotations

import json
from typing import Any

from .names import is_metric, kind, name
from .parsed import Parsed, Where, sort


def read(text: str) -> Parsed | None:
    """The fields of one JSON line, or None if it is not a JSON object."""
    text = text.strip()
    if not (text.startswith("{") and text.endswith("}")):
        return None
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    parsed = from_numbers(obj, "json") if isinstance(obj, dict) else None
    return parsed if parsed and (parsed.metrics or parsed.where.step is not None) else None


def from_numbers(obj: dict[str, Any], reader: str) -> Parsed:
    """A flat record of named numbers as PARSED fields (JSON lines, and HF Trainer's dicts)."""
    fields = {name(k): float(v) for k, v in obj.items() if _number(v)}
    where = Where()
    for key in [k for k in fields if kind(k) in ("epoch", "counter")]:
        value = fields.pop(key)
        if kind(key) == "epoch":
            where.epoch = int(value) if value == int(value) else value
        elif key == "step":
            where.step = int(value)  # stated, not guessed: the step it is
        else:
            where.counter = int(value)
    parsed = sort(fields, Parsed(where=where, reader=reader))
    if not any(is_metric(k) for k in parsed.step):
        parsed.step.clear()
    return parsed


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
