"""The run index on disk (stdlib only): `index.rows`, `index-facts.tsv`, `index-best-configs.tsv` in the home.

`index.rows` holds the `ls` rows: a line per run, `id TAB fingerprint TAB start TAB end`, then every row
as `ls --json` prints them (a JSON array, a row a line), each line naming its row's bytes there; so a
warm `ls --json` reads one file and copies each row out without decoding or encoding it. The facts of
the whole log the console's row needs beyond its `ls` row (`Summary.facts`) are a line per run, `id TAB
fingerprint TAB json`; the details that filters need (best metrics, config keys) a line per distinct
config, then a line per run naming its config's (`write_details`). Both are read only when a summary
first asks. JSON text never holds a raw tab or newline.

Each file is replaced atomically (written aside, then renamed), and its first line carries the index's
version and the length and CRC-32 of the rest: a file that is missing, unreadable, of another version,
cut or garbled reads as empty (its runs are summarized again, never shown from it), and a line of the
facts or details whose fingerprint is not its row's is not read (that part is derived from the run).
"""

from __future__ import annotations

import contextlib
import json
import os
import zlib
from collections.abc import Callable, Iterator, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, overload

from .events import decode

#: (Names of their own: an older version's `index.tsv` and `index-details.tsv`, on a home shared with a
#: host that runs it, are neither read nor overwritten.)
ROWS, FACTS, DETAILS = "index.rows", "index-facts.tsv", "index-best-configs.tsv"
#: How `json.dumps` writes a summary's details, `{"best": {...}, "config": {...}}`: kept in two parts.
BEST_AT, CONFIG_AT = '{"best": ', ', "config": '
#: Bumped when a line's shape changes: files of another version are rebuilt.
HEADER = "trainconsole run index 5"


class Summary:
    """One run's summary: its `ls` row, the facts of its log and its details (best metrics, config keys),
    each kept as JSON text and decoded only when asked for. Facts and details not in hand come from
    `fetch_part` (the index's files, else the run's own files). `keep`: whether it may be kept in the
    index, where it was judged as it was derived (`index.keeps`; None: not yet)."""

    def __init__(self, run_id: str, key: str, row_text: str | None, details_text: str | None = None,
                 fetch_part: Callable[[Summary, str], str] | None = None, facts_text: str | None = "{}",
                 keep: bool | None = None, row_at: tuple[bytes, int, int] | None = None,
                 details_parts: tuple[str, str] | None = None) -> None:
        self.id, self.key, self.keep, self._row_text, self._row_at = run_id, key, keep, row_text, row_at
        self._details_text, self._facts_text, self._fetch = details_text, facts_text, fetch_part
        # the details' two parts as `json.dumps` writes them (`BEST_AT`, `CONFIG_AT`), where in hand
        self._best_text, self._config_text = details_parts or (None, None)

    @classmethod
    def derived(cls, run_id: str, key: str, row: bytes, best_text: str, config_text: str, facts_text: str,
                keep: bool | None) -> Summary:
        """A summary a pool's process derived and handed back as bytes and texts (`index.derive`): its
        row as the UTF-8 bytes `ls --json` prints (encoded there, in parallel, once), its details as their
        two parts (a config's text is one object for the runs of one config in a process's share, so it
        is pickled once for them all)."""
        return cls(run_id, key, None, None, None, facts_text, keep, (row, 0, len(row)),
                   (best_text, config_text))

    @property
    def row_bytes(self) -> bytes:
        """The `ls` row as UTF-8 JSON bytes."""
        if self._row_text is None and self._row_at is not None:
            data, start, end = self._row_at
            return data if start == 0 and end == len(data) else data[start:end]
        return self.row_text.encode()

    @property
    def row_text(self) -> str:
        """The `ls` row as JSON text (cut from the index's rows when read from there)."""
        if self._row_text is None:
            data, start, end = self._row_at or (b"{}", 0, 2)
            self._row_text = data[start:end].decode()
        return self._row_text

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
        """The `ls` row (decoded from the index's bytes where it was read from there: a filter decodes
        every row)."""
        if self._row_text is None and self._row_at is not None:
            data, start, end = self._row_at
            return _decoded(data[start:end])
        return _decoded(self.row_text)

    @property
    def details_text(self) -> str:
        """The details as JSON text (fetched once if not in hand)."""
        if self._details_text is None and self._best_text is not None and self._config_text is not None:
            self._details_text = f"{BEST_AT}{self._best_text}{CONFIG_AT}{self._config_text}}}"
        elif self._details_text is None:
            self._details_text = self._fetch(self, DETAILS) if self._fetch else '{"best": {}, "config": {}}'
        return self._details_text

    @property
    def config_text(self) -> str | None:
        """The config's part of the details' JSON text (None where they are not as `json.dumps` writes
        them): one string shared by the runs of one config, where read from the index's file."""
        if self._config_text is None:
            text = self.details_text  # (the index's file gives the shared string as it is read)
            if self._config_text is None:
                at = text.find(CONFIG_AT)
                whole = text.startswith(BEST_AT) and at > 0 and text.endswith("}")
                self._config_text = text[at + len(CONFIG_AT):-1] if whole else ""
        return self._config_text or None

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


def _decoded(text: str | bytes) -> Any:
    """JSON text decoded: by orjson where it reads it (3x the stdlib's speed: a filter decodes every
    row), else by the stdlib (NaN and Infinity, which json.dumps writes for a diverged loss)."""
    return decode(text)


def read_lines(path: Path) -> dict[str, tuple[str, ...]]:
    """One index file's lines: {id: (fingerprint, json text)} ({} if missing, unreadable, of another
    version, or not the bytes its header's checksum was taken of: cut, garbled or edited by hand)."""
    text = _checked(path)
    found: dict[str, tuple[str, ...]] = {}
    for line in text.split("\n") if text else ():
        parts = line.split("\t")
        if len(parts) == 3:  # (the empty rest after the last line)
            found[parts[0]] = (parts[1], parts[2])
    return found


def write_details(path: Path, summaries: dict[str, Summary]) -> None:
    """Replace the details file: a line per distinct config (`TAB TAB json`), then a line per run, `id TAB
    fingerprint TAB best metrics TAB the number of its config's line` (runs of one config file share it,
    and a filter decodes each once); details not as `json.dumps` writes them whole, with no number."""
    configs: dict[str, int] = {}
    lines = []
    for run_id, summary in summaries.items():
        if summary._best_text is not None and summary._config_text:  # (in hand as its two parts)
            n = configs.setdefault(summary._config_text, len(configs))
            lines.append(f"{run_id}\t{summary.key}\t{summary._best_text}\t{n}\n")
            continue
        text = summary.details_text
        at = text.find(CONFIG_AT)
        if text.startswith(BEST_AT) and at > 0 and text.endswith("}"):  # (made again of its two parts whole)
            n = configs.setdefault(text[at + len(CONFIG_AT):-1], len(configs))
            lines.append(f"{run_id}\t{summary.key}\t{text[len(BEST_AT):at]}\t{n}\n")
        else:
            lines.append(f"{run_id}\t{summary.key}\t{text}\t\n")
    body = ("".join(f"\t\t{config}\n" for config in configs) + "".join(lines)).encode()
    _replace(path, _header(body).encode() + b"\n" + body)


def read_details(path: Path) -> dict[str, tuple[str, ...]]:
    """The details file's lines: {id: (fingerprint, best metrics, config)} or {id: (fingerprint, details)}
    ({} if it reads as none)."""
    text = _checked(path)
    if not text:
        return {}
    lines = text.split("\n")
    ends = next((n for n, line in enumerate(lines) if not line.startswith("\t\t")), len(lines))
    configs = [line[2:] for line in lines[:ends]]
    # the runs' lines, four fields each, split at once (100,000 of them for a filter)
    fields = "\t".join(lines[ends:]).split("\t")
    if len(fields) % 4 != 1:  # (the empty rest after the last line)
        return {}
    try:
        return {run_id: (key, best, configs[int(n)]) if n else (key, best)
                for run_id, key, best, n in zip(fields[0::4], fields[1::4], fields[2::4], fields[3::4],
                                                strict=False)}  # (the first has the empty rest)
    except (ValueError, IndexError):
        return {}


def _checked(path: Path) -> str | None:
    """The text after an index file's first line, if that line is this version's and its length and
    checksum are the rest's."""
    try:
        with open(path, "rb") as f:
            head, _, body = f.read().partition(b"\n")
        return body.decode() if head == _header(body).encode() else None
    except (OSError, ValueError):
        return None


def write_lines(path: Path, lines: dict[str, tuple[str, str]]) -> None:
    """Replace an index file atomically (a temporary file renamed: a reader sees the old file or the
    new one, whole); a home we cannot write to keeps working without one."""
    body = "".join(f"{i}\t{key}\t{text}\n" for i, (key, text) in lines.items()).encode()
    _replace(path, _header(body).encode() + b"\n" + body)


def _header(body: bytes | memoryview, keys_len: int = 0) -> str:
    """The first line: the version, the length and CRC-32 of the bytes after it, and (the rows file's)
    the length of its keys' lines."""
    return f"{HEADER} {len(body)} {zlib.crc32(body):08x} {keys_len}"


class Rows:
    """A rows file as read: its runs' ids and fingerprints in its order, each run's summary made the first
    time it is asked for (a warm listing of a whole home asks for none: 100,000 objects not made)."""

    def __init__(self, data: bytes = b"", base: int = 0, fields: list[str] | None = None,
                 fetch_part: Callable[[Summary, str], str] | None = None) -> None:
        fields = fields or [""]
        self.ids, self.keys = fields[0:-1:4], fields[1::4]  # (`fields` ends with the empty rest)
        self._starts, self._ends, self._data, self._base = fields[2::4], fields[3::4], data, base
        self._made: list[Summary | None] = [None] * len(self.ids)
        self._fetch = fetch_part

    def __len__(self) -> int:
        return len(self.ids)

    @cached_property
    def position(self) -> dict[str, int]:
        """Each run id's place in the file."""
        return {run_id: n for n, run_id in enumerate(self.ids)}

    def summary(self, n: int) -> Summary:
        """The summary of the file's `n`th run (made once)."""
        made = self._made[n]
        if made is None:
            at = (self._data, int(self._starts[n]) + self._base, int(self._ends[n]) + self._base)
            made = self._made[n] = Summary(self.ids[n], self.keys[n], None, None, self._fetch, None, True, at)
        return made

    def summaries(self) -> dict[str, Summary]:
        """Every summary, by run id."""
        return {run_id: self.summary(n) for n, run_id in enumerate(self.ids)}

    def array(self, positions: Sequence[int]) -> bytes:
        """The rows at these positions as `ls --json` prints them (a JSON array, a row a line): runs of
        rows that lie one after another in the file copied out as one piece (all of them: its array)."""
        if not positions:
            return b"[]"
        if positions == range(len(self)):  # (the file's array, "[\n" and "\n]" included: one copy)
            return self._data[int(self._starts[0]) + self._base - 2:int(self._ends[-1]) + self._base + 2]
        pieces, first, last = [], positions[0], positions[0]
        for n in positions[1:]:
            if n != last + 1:
                pieces.append(self._span(first, last))
                first = n
            last = n
        pieces.append(self._span(first, last))
        return b"[\n" + b",\n".join(pieces) + b"\n]"

    def _span(self, first: int, last: int) -> bytes:
        """The rows from the `first`th to the `last`th, with the ",\n" between them."""
        return self._data[int(self._starts[first]) + self._base:int(self._ends[last]) + self._base]


def read_rows(path: Path, fetch_part: Callable[[Summary, str], str]) -> Rows:
    """The rows file's runs (none if it reads as none: see the module's docstring)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
        at = data.index(b"\n") + 1  # (the rest is not copied: 80 MB for 100,000 runs)
        keys_len = int(data[:at].rpartition(b" ")[2])
        if data[:at - 1] != _header(memoryview(data)[at:], keys_len).encode():  # (another version, or
            return Rows()  # not the bytes it was taken of)
        # every line's four fields (`id TAB key TAB start TAB end`), split at once: 100,000 lines'
        # splits and loops were a fifth of a warm listing
        fields = data[at:at + keys_len].decode().replace("\n", "\t").split("\t")
        if len(fields) % 4 != 1 or not all(n.isdigit() for n in fields[2:-1:4] + fields[3::4]):
            return Rows()
    except (OSError, ValueError, IndexError):
        return Rows()
    return Rows(data, at + keys_len, fields, fetch_part)


def write_rows(path: Path, summaries: dict[str, Summary]) -> None:
    """Replace the rows file with these summaries' rows (atomically, as `write_lines`)."""
    texts = [s.row_bytes for s in summaries.values()]
    keys, at = [], 2  # (after the array's "[\n")
    for (run_id, summary), text in zip(summaries.items(), texts, strict=True):
        keys.append(f"{run_id}\t{summary.key}\t{at}\t{at + len(text)}\n")
        at += len(text) + 2  # (and the ",\n" after it)
    head = "".join(keys).encode()
    body = head + (b"[\n" + b",\n".join(texts) + b"\n]" if texts else b"[]")
    _replace(path, _header(body, len(head)).encode() + b"\n" + body)


def _replace(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()


class IndexRows(Sequence[Summary]):
    """Runs of a rows file (those at `positions`, in that order; default: every one, in its order):
    `joined_rows` copies their rows out as they lie there, and a summary is made only when one is asked
    for (a warm listing or filter of a whole home: up to 100,000 rows, 70 MB, neither decoded nor made
    into objects)."""

    def __init__(self, rows: Rows, positions: Sequence[int] | None = None) -> None:
        self.rows = rows
        self.positions = range(len(rows)) if positions is None else positions

    def __len__(self) -> int:
        return len(self.positions)

    @overload
    def __getitem__(self, n: int) -> Summary: ...

    @overload
    def __getitem__(self, n: slice) -> list[Summary]: ...

    def __getitem__(self, n: int | slice) -> Summary | list[Summary]:
        if isinstance(n, slice):
            return [self.rows.summary(i) for i in self.positions[n]]
        return self.rows.summary(self.positions[n])

    def __iter__(self) -> Iterator[Summary]:
        return (self.rows.summary(n) for n in self.positions)


def joined_rows(summaries: Sequence[Summary]) -> bytes:
    """The summaries' rows as `ls --json` prints them (UTF-8): a JSON array, a row a line. Rows that lie
    one after another in the index's rows file are copied out together, as one piece (a warm listing of
    a whole home: the file's array at once, never decoded)."""
    if isinstance(summaries, IndexRows):
        return summaries.rows.array(summaries.positions)
    pieces: list[bytes] = []
    span: tuple[bytes, int, int] | None = None
    for summary in summaries:
        at = summary._row_at if summary._row_text is None else None
        if span is not None and at is not None and at[0] is span[0] and at[1] == span[2] + 2:
            span = (span[0], span[1], at[2])
            continue
        if span is not None:
            pieces.append(span[0][span[1]:span[2]])
        span = at
        if at is None:
            pieces.append(summary.row_bytes)
    if span is not None:
        pieces.append(span[0][span[1]:span[2]])
    return b"[\n" + b",\n".join(pieces) + b"\n]" if pieces else b"[]"


class IndexFiles:
    """The home's index files: rows read at once, facts and details the first time a summary asks."""

    def __init__(self, home: Path, derive_part: Callable[[Summary, str], str]) -> None:
        self.home, self._derive = home, derive_part
        self._parts: dict[str, dict[str, tuple[str, ...]]] = {}

    def fetch_part(self, summary: Summary, name: str) -> str:
        """A summary's facts (FACTS) or details (DETAILS): from their file when its fingerprint there is
        the row's, else derived from the run."""
        if name not in self._parts:
            self._parts[name] = (read_details if name == DETAILS else read_lines)(self.home / name)
        key, *texts = self._parts[name].get(summary.id, ("", ""))
        if key != summary.key or not texts[0]:
            return self._derive(summary, name)
        if len(texts) == 1:
            return texts[0]
        summary._best_text, summary._config_text = texts
        return f"{BEST_AT}{texts[0]}{CONFIG_AT}{texts[1]}}}"

    def load(self) -> dict[str, Summary]:
        """The index's summaries by run id."""
        return self.rows().summaries()

    def rows(self) -> Rows:
        """The index's rows file as read (each summary made when asked for)."""
        return read_rows(self.home / ROWS, self.fetch_part)

    def save(self, summaries: dict[str, Summary]) -> None:
        """Replace the files with these summaries (the parts first: a row never names a part not yet
        written, and a part whose fingerprint is not its row's is not read)."""
        write_details(self.home / DETAILS, summaries)
        write_lines(self.home / FACTS, {i: (s.key, s.facts_text) for i, s in summaries.items()})
        write_rows(self.home / ROWS, summaries)
