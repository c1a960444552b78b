"""Metrics from the TensorBoard event files a script writes, tailed with TensorBoard's own reader.

Folders: `[script] tensorboard` (relative to the directory the script runs in) and `runs/` there (where
`torch.utils.tensorboard.SummaryWriter()` writes by default); only files written since the script
started count. Each scalar becomes a field of a `step` event at its step, or of an `eval` event for tags
naming a validation (`Loss/val` -> val_loss, `Accuracy/test` -> val_acc); `add_scalars`' chart titles
never become metrics (`chart_field`). `tensorboard` is imported only
once an event file shows up, so scripts that write none pay nothing.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .file_tail import FileTail
from .names import name

EVAL_PARTS = ("val", "valid", "validation", "test", "eval")
TRAIN_PARTS = ("train", "training")
METRIC_WORDS = ("loss", "accuracy", "acc", "perplexity", "ppl", "error")
PATTERN = "events.out.tfevents.*"


def field(tag: str) -> tuple[str, bool]:
    """The event field for a scalar's tag, and whether it belongs to an evaluation."""
    parts = [p for p in re.split(r"[/.]", tag.lower()) if p]
    is_eval = any(p in EVAL_PARTS for p in parts)
    rest = [p for p in parts if p not in EVAL_PARTS + TRAIN_PARTS] or parts
    key = name("_".join(rest))
    if is_eval:
        key = key if key.startswith("val_") else f"val_{key}"
    return key, is_eval or key.startswith("val_")


def chart_field(tag: str, folder: str) -> tuple[str, bool]:
    """`field` for a scalar of `add_scalars(title, {key: value})`, which torch writes with the chart's
    title as its tag into a folder `<title>_<key>`: the key names the metric, never the title (a key
    naming only a split takes the title's metric word: `Training vs. Validation Loss` + `Validation` ->
    val_loss)."""
    prefix = tag.replace("/", "_") + "_"
    if not folder.startswith(prefix) or len(folder) == len(prefix):
        return field(tag)
    key = folder[len(prefix):]
    word = next((w for w in METRIC_WORDS if w in tag.lower()), None)
    if key.lower() in EVAL_PARTS + TRAIN_PARTS and word:
        return field(f"{word}/{key}")
    return field(key)


class TensorBoardTail(FileTail):
    """Polls the folders for event files and emits their new scalars, until `finish()`."""

    def __init__(self, folders: list[Path], since: float, emit: Callable[..., Any]) -> None:
        super().__init__("tensorboard-tail")
        self.folders, self.since, self.emit = folders, since, emit
        self.loaders: dict[Path, Any] = {}

    def poll(self) -> None:
        """Read what every event file grew by and emit it, one event per step and kind."""
        for path in self._new_files():
            self.loaders[path] = _loader(path)
            if self.loaders[path] is None and len(self.loaders) == 1:  # said once, at the first file
                self.emit("warning", code="tensorboard_missing", message=f"TensorBoard files ({path.parent}) "
                          "are not read: the tensorboard package is not installed here",
                          hint="pip install 'trainconsole[tensorboard]'")
        scalars: dict[tuple[int, bool], dict[str, float]] = defaultdict(dict)
        for path, loader in self.loaders.items():
            if loader is None:
                continue
            for event in loader.Load():
                for tag, value in _scalars(event):
                    key, is_eval = chart_field(tag, path.parent.name)
                    scalars[(event.step, is_eval)][key] = value
        for (step, is_eval), fields in sorted(scalars.items()):
            self.emit("eval" if is_eval else "step", step=step, source="tensorboard", **fields)

    def _new_files(self) -> list[Path]:
        found = []
        for folder in self.folders:
            if not folder.is_dir():
                continue
            for path in folder.rglob(PATTERN):
                if path not in self.loaders and _mtime(path) >= self.since - 1.0:
                    found.append(path)
        return found


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _loader(path: Path) -> Any:
    try:
        from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    except ImportError:
        return None
    return EventFileLoader(str(path))


def _scalars(event: Any) -> list[tuple[str, float]]:
    """(tag, value) of each scalar in an event (after TensorBoard's compat layer: a scalar tensor)."""
    found = []
    for value in event.summary.value:
        if value.metadata.plugin_data.plugin_name != "scalars":
            continue
        from tensorboard.util import tensor_util

        found.append((value.tag, float(tensor_util.make_ndarray(value.tensor).item())))
    return found

