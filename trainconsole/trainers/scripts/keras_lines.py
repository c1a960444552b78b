"""Keras' progress lines, read exactly (stdlib only, pure; Keras itself is not needed).

`model.fit` prints `Epoch 3/10`, then a bar per epoch: Keras 3 `  3/10 ━━━━━━━━ 0s 5ms/step - accuracy:
0.9000 - loss: 0.3100` (coloured, redrawn with `\\b` and `\\r`), tf.keras 2 ` 3/10 [=====>....] - ETA: 0s -
loss: 0.3100`, with verbose=2 one line per epoch (`10/10 - 1s - 50ms/step - loss: ...`); the epoch's last
state adds `val_*`. The count is the step within the epoch (`output.Steps` makes it global), the epoch is
the last `Epoch k/N` line's, each metric is the value shown, times and rates go to `timing`.
"""

from __future__ import annotations

import re

from .lines import NUM, RATE
from .names import name
from .parsed import Parsed, Where, sort

#: The count at the start of the line, then a Keras 3 bar, a tf.keras 2 bar or verbose=2's ` - 1s`.
PROGRESS = re.compile(r"^\s*(?P<n>\d+)/(?P<total>\d+|Unknown)(?:\s+━+|\s+\[[=>.]*\]|\s+-\s+\d+s\b)")
METRIC = re.compile(rf"\s-\s(?P<key>[A-Za-z_][\w@./]*):\s(?P<value>{NUM})(?![\w:])")
EPOCH = re.compile(r"^\s*Epoch (?P<epoch>\d+)/(?P<epochs>\d+)\s*$")


def read(text: str) -> Parsed | None:
    """The fields of one Keras line (plain text), or None if it is not one."""
    epoch = EPOCH.match(text)
    if epoch:
        return Parsed(where=Where(epoch=int(epoch["epoch"]), epochs=int(epoch["epochs"])), reader="keras")
    bar = PROGRESS.match(text)
    if not bar:
        return None
    total = None if bar["total"] == "Unknown" else int(bar["total"])
    fields = {name(m["key"]): float(m["value"]) for m in METRIC.finditer(text) if m["key"] != "ETA"}
    fields.update((name(m["key"]), float(m["value"])) for m in RATE.finditer(text))
    return sort(fields, Parsed(where=Where(counter=int(bar["n"]), total=total), reader="keras"))
