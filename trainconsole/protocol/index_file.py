"""The run index on disk (stdlib only): `index.tsv`, `index-facts.tsv` and `index-details.tsv` in the home.

One line per run, `id TAB fingerprint TAB json`: the `ls` row in the first file, the facts of the whole
log the console's row needs beyond it (`Summary.facts`) in the second, the details that filters need
(best metrics, config keys) in the third, so that `ls --json` reads a fifth of the bytes and copies each
row out without decoding or encoding it. JSON text never holds a raw tab or newline. Each file is
replaced atomically; one that is missing, unreadable or of another version reads as empty (the runs
are summarized again), and a line of the second or third whose fingerprint is not its row's is not
read (its part is derived from the run again).
"""

from __future__ import annotations

import contextlib
import json
import os
import zlib
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any

from .events import fast_loads

ROWS, FACTS, DETAILS = "index.tsv", "index-facts.tsv", "index-details.tsv"
#: Bumped when a line's shape changes: files of another version are rebuilt.
HEADER = "trainconsole run index 4"


class Summary:
    """One run's summary: its `ls` row, the facts of its log and its details (best metrics, config keys),
    each kept as JSON text and decoded only when asked for. Facts and details not in hand come from
    `fetch_part` (the index's files, else the run's own files). `keep`: whether it may be kept in the
    index, where it was judged as it was derived (`index.keeps`; None: not yet)."""

    def __init__(self, run_id: str, key: str, row_text: str, details_text: str | None = None,
                 fetch_part: Callable[[Summary, str], str] | None = None, facts_text: str | None = "{}",
                 keep: bool | None = None) -> None:
        self.id, self.key, self.row_text, self.keep = run_id, key, row_text, keep
        self._details_text, self._facts_text, self._fetch = details_text, facts_text, fetch_part

    @classmethod
    def of(cls, run_id: str, key: str, row: dict[str, Any], best: dict[str, Any],
           config: dict[str, Any], facts: dict[str, Any] | None = None) -> Summary:
        """A summary made from its parts."""
        return cls(run_id, key, json.dumps(row), json.dumps({"best": best, "config": config}),
                   facts_text=json.dumps(facts or {}))

    @property
    def facts_text(self) -> str:
        """The facts as JSON text (fetched once if not in hand)."""
        if self._facts_text is None:
            self._facts_text = self._fetch(self, FACTS) if self._fetch else "{}"
        return self._facts_text

    @cached_property
    def facts(self) -> dict[str, Any]:
        """What the console's row needs beyond the `ls` row: the facts of its events
        (`run_row.RunRow.facts`) ({} in a summary made without them)."""
        return _decoded(self.facts_text)

    @cached_property
    def row(self) -> dict[str, Any]:
        """The `ls` row."""
        return _decoded(self.row_text)

    @property
    def details_text(self) -> str:
        """The details as JSON text (fetched once if not in hand)."""
        if self._details_text is None:
            self._details_text = self._fetch(self, DETAILS) if self._fetch else '{"best": {}, "config": {}}'
        return self._details_text

    @cached_property
    def details(self) -> dict[str, Any]:
        """{"best": ..., "config": ...}."""
        return _decoded(self.details_text)

    @property
    def best(self) -> dict[str, Any]:
        """The best val_acc and val_loss, with their epochs."""
        return self.details["best"]

    @property
    def config(self) -> dict[str, Any]:
        """The config as dotted keys (`train.lr`)."""
        return self.details["config"]


def _decoded(text: str) -> Any:
    """JSON text decoded: by orjson where it reads it (3x the stdlib's speed: a filter decodes every
    row), else by the stdlib (NaN and Infinity, which json.dumps writes for a diverged loss)."""
    try:
        return fast_loads()(text)
    except ValueError:
        return json.loads(text)


def read_lines(path: Path) -> dict[str, tuple[str, str]]:
    """One index file's lines: {id: (fingerprint, json text)} ({} if missing, unreadable, of another
    version, or not the bytes its header's checksum was taken of: cut, garbled or edited by hand)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
        head, _, body = data.partition(b"\n")
        if head != _header(body).encode():
            return {}
        text = body.decode()
    except (OSError, ValueError):
        return {}
    found = {}
    for line in text.split("\n"):
        parts = line.split("\t")
        if len(parts) == 3:  # (the empty rest after the last line)
            found[parts[0]] = (parts[1], parts[2])
    return found


def write_lines(path: Path, lines: dict[str, tuple[str, str]]) -> None:
    """Replace an index file atomically (a temporary file renamed: a reader sees the old file or the
    new one, whole); a home we cannot write to keeps working without one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    body = "".join(f"{i}\t{key}\t{text}\n" for i, (key, text) in lines.items()).encode()
    try:
        with open(tmp, "wb") as f:
            f.write(_header(body).encode() + b"\n" + body)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()


def _header(body: bytes) -> str:
    """The first line: the version, and the length and CRC-32 of the lines after it."""
    return f"{HEADER} {len(body)} {zlib.crc32(body):08x}"


class IndexFiles:
    """The home's index files: rows read at once, facts and details the first time a summary asks."""

    def __init__(self, home: Path, derive_part: Callable[[Summary, str], str]) -> None:
        self.home, self._derive = home, derive_part
        self._parts: dict[str, dict[str, tuple[str, ...]]] = {}

    def fetch_part(self, summary: Summary, name: str) -> str:
        """A summary's facts (FACTS) or details (DETAILS): from their file when its fingerprint there is
        the row's, else derived from the run."""
        if name not in self._parts:
            self._parts[name] = read_lines(self.home / name)
        key, text = self._parts[name].get(summary.id, ("", ""))
        return text if key == summary.key and text else self._derive(summary, name)

    def load(self) -> dict[str, Summary]:
        """The index's summaries by run id."""
        fetch = self.fetch_part
        return {i: Summary(i, key, text, None, fetch, None, True)
                for i, (key, text) in read_lines(self.home / ROWS).items()}

    def save(self, summaries: dict[str, Summary]) -> None:
        """Replace the files with these summaries (the parts first: a row never names a part not yet
        written, and a part whose fingerprint is not its row's is not read)."""
        write_lines(self.home / DETAILS, {i: (s.key, s.details_text) for i, s in summaries.items()})
        write_lines(self.home / FACTS, {i: (s.key, s.facts_text) for i, s in summaries.items()})
        write_lines(self.home / ROWS, {i: (s.key, s.row_text) for i, s in summaries.items()})
