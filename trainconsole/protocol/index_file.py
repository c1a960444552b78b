"""The run index on disk (stdlib only): `index.tsv` and `index-details.tsv` in the home.

One line per run, `id TAB fingerprint TAB json`: the `ls` row in the first file (and a fourth column,
the facts of the whole log the console's row needs beyond it: `Summary.facts`), the details that only
filters need (best metrics, config keys) in the second, so that `ls --json` reads a third of the bytes
and copies each row out without decoding or encoding it. JSON text never holds a raw tab or newline.
Both files are replaced atomically; one that is missing, unreadable or of another version reads as
empty (the runs are summarized again).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any

ROWS, DETAILS = "index.tsv", "index-details.tsv"
#: Bumped when a line's shape changes: files of another version are rebuilt.
HEADER = "trainconsole run index 3"
TAB = "\t"


class Summary:
    """One run's summary: its `ls` row and its details (best metrics, config keys), each kept as JSON
    text and decoded only when asked for. Details not in hand come from `fetch_details` (the details
    file, else the run's own files)."""

    def __init__(self, run_id: str, key: str, row_text: str, details_text: str | None = None,
                 fetch_details: Callable[[Summary], str] | None = None, facts_text: str = "{}") -> None:
        self.id, self.key, self.row_text, self.facts_text = run_id, key, row_text, facts_text
        self._details_text, self._fetch = details_text, fetch_details

    @classmethod
    def of(cls, run_id: str, key: str, row: dict[str, Any], best: dict[str, Any],
           config: dict[str, Any], facts: dict[str, Any] | None = None) -> Summary:
        """A summary made from its parts."""
        return cls(run_id, key, json.dumps(row), json.dumps({"best": best, "config": config}),
                   facts_text=json.dumps(facts or {}))

    @cached_property
    def facts(self) -> dict[str, Any]:
        """What the console's row needs beyond the `ls` row: the facts of its events
        (`run_row.RunRow.facts`) ({} in a summary made without them)."""
        return json.loads(self.facts_text)

    @cached_property
    def row(self) -> dict[str, Any]:
        """The `ls` row."""
        return json.loads(self.row_text)

    @property
    def details_text(self) -> str:
        """The details as JSON text (fetched once if not in hand)."""
        if self._details_text is None:
            self._details_text = self._fetch(self) if self._fetch else '{"best": {}, "config": {}}'
        return self._details_text

    @cached_property
    def details(self) -> dict[str, Any]:
        """{"best": ..., "config": ...}."""
        return json.loads(self.details_text)

    @property
    def best(self) -> dict[str, Any]:
        """The best val_acc and val_loss, with their epochs."""
        return self.details["best"]

    @property
    def config(self) -> dict[str, Any]:
        """The config as dotted keys (`train.lr`)."""
        return self.details["config"]


def read_lines(path: Path, columns: int = 3) -> dict[str, tuple[str, ...]]:
    """One index file's lines: {id: (fingerprint, json text, ...)} ({} if missing, unreadable or old)."""
    try:
        lines = path.read_text().split("\n")
    except (OSError, ValueError):
        return {}
    if lines[0] != HEADER:
        return {}
    found = {}
    for line in lines[1:]:
        parts = line.split("\t")
        # a cut or hand-edited line is dropped (its run is summarized again), never printed as a row
        if len(parts) == columns and all(p[:1] == "{" and p[-1:] == "}" for p in parts[2:]):
            found[parts[0]] = tuple(parts[1:])
    return found


def write_lines(path: Path, lines: dict[str, tuple[str, ...]]) -> None:
    """Replace an index file atomically; a home we cannot write to keeps working without one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(HEADER + "\n" + "".join(f"{i}\t{TAB.join(parts)}\n" for i, parts in lines.items()))
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()


class IndexFiles:
    """The home's two index files: rows read at once, details read the first time a summary asks."""

    def __init__(self, home: Path, derive_details: Callable[[Summary], str]) -> None:
        self.home, self._derive = home, derive_details

    @cached_property
    def _details(self) -> dict[str, tuple[str, ...]]:
        return read_lines(self.home / DETAILS)

    def fetch_details(self, summary: Summary) -> str:
        """A summary's details: from the details file when its fingerprint matches, else derived."""
        key, text = self._details.get(summary.id, ("", ""))
        return text if key == summary.key and text else self._derive(summary)

    def load(self) -> dict[str, Summary]:
        """The index's summaries by run id."""
        return {i: Summary(i, key, text, None, self.fetch_details, facts)
                for i, (key, text, facts) in read_lines(self.home / ROWS, 4).items()}

    def save(self, summaries: dict[str, Summary]) -> None:
        """Replace both files with these summaries."""
        write_lines(self.home / DETAILS, {i: (s.key, s.details_text) for i, s in summaries.items()})
        write_lines(self.home / ROWS, {i: (s.key, s.row_text, s.facts_text) for i, s in summaries.items()})
