"""Each run's tags and note as they change (its `meta.json`, written by the control layer from any front
end): one `stat` per run per look, the file read only when it was replaced. No UI code."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from trainers.protocol import RunDir
from trainers.protocol.meta import META, read_meta, tags_of


@dataclass(frozen=True)
class RunMeta:
    """What a run's meta.json says of it for the table."""

    tags: list[str]
    note: str


class MetaWatch:
    """Remembers which meta.json it read last of each run (its mtime and inode: meta.json is replaced by
    rename), so a look reads only what changed."""

    def __init__(self, home: Path) -> None:
        self.runs = os.fspath(home / "runs")
        self._seen: dict[str, tuple[int, int]] = {}

    def look(self, run_ids: list[str]) -> dict[str, RunMeta]:
        """The runs among `run_ids` whose tags or note changed since the last look (a run without a
        meta.json: no tags, no note), and the new values."""
        changed: dict[str, RunMeta] = {}
        for run_id in run_ids:
            path = f"{self.runs}/{run_id}"
            try:
                st = os.stat(f"{path}/{META}")
                mark = (st.st_mtime_ns, st.st_ino)
            except OSError:
                mark = (0, 0)
            if self._seen.get(run_id, (0, 0)) != mark:
                self._seen[run_id] = mark
                meta = read_meta(RunDir(path)) if mark != (0, 0) else {}
                changed[run_id] = RunMeta(tags_of(meta), str(meta.get("note") or ""))
        for gone in self._seen.keys() - set(run_ids):
            del self._seen[gone]
        return changed
