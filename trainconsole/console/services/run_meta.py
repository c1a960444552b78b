"""Each run's tags and note as they change (its `meta.json`, written by the control layer from any front
end): one `stat` per run per look, at most PER_LOOK runs a look in turn (a home of 10,000 runs costs
what one of 1,000 does), the file read only when it was replaced. The runs the home's change journal
names (`trainconsole.protocol.changes`: the control layer appends each run it tags, notes or prunes)
are
looked at in the next look whatever their turn, so a change from the CLI shows within a look at any size.
No UI code."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from trainconsole.protocol import RunDir
from trainconsole.protocol.changes import ChangeFeed
from trainconsole.protocol.meta import META, read_meta, tags_of

PER_LOOK = 1000
#: Looks for which a run the journal named waits for its row (a restore's run comes with the next scan).
NAMED_LOOKS = 20


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
        self._next = 0  # where the next look's turn starts
        self._feed = ChangeFeed(home)
        self._named: dict[str, int] = {}  # named by the journal, not in the table yet: looks left to wait

    def look(self, run_ids: list[str], first: tuple[str, ...] = ()) -> dict[str, RunMeta]:
        """The runs whose tags or note changed since they were last looked at (a run without a meta.json:
        no tags, no note), and the new values: `first` (the selected run) and those the change journal
        named since the last look at every look, and of `run_ids` the next PER_LOOK in turn."""
        window = run_ids
        if len(run_ids) > PER_LOOK:
            start = self._next % len(run_ids)
            window = run_ids[start:start + PER_LOOK] + run_ids[:max(0, start + PER_LOOK - len(run_ids))]
            self._next = start + PER_LOOK
        for run_id in self._feed.read():
            self._named[run_id] = NAMED_LOOKS
        named = self._take_named(run_ids) if self._named else []
        changed: dict[str, RunMeta] = {}
        for run_id in dict.fromkeys([*first, *named, *window]):
            path = f"{self.runs}/{run_id}"
            try:
                st = os.stat(f"{path}/{META}")
                stamp = (st.st_mtime_ns, st.st_ino)
            except OSError:
                stamp = (0, 0)
            if self._seen.get(run_id, (0, 0)) != stamp:
                self._seen[run_id] = stamp
                meta = read_meta(RunDir(path)) if stamp != (0, 0) else {}
                changed[run_id] = RunMeta(tags_of(meta), str(meta.get("note") or ""))
        for gone in self._seen.keys() - set(run_ids):
            del self._seen[gone]
        return changed

    def _take_named(self, run_ids: list[str]) -> list[str]:
        """The runs the journal named that have rows now; the others wait a look less (a restored run's
        row may come a scan after its journal line)."""
        known = set(run_ids)
        named = [run_id for run_id in self._named if run_id in known]
        for run_id in list(self._named):
            self._named[run_id] -= 1
            if run_id in known or self._named[run_id] <= 0:
                del self._named[run_id]
        return named
