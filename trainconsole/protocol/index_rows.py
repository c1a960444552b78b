"""A run's summary derived from its files (stdlib only): the `ls` row, the facts of its log, its best
metrics and config keys (`summarize`), what the run index (`index.py`) keeps of an ended run.

A run's files are read in one look (`run_files`); its log through the summary beside it while that is
true (`run_summary`), else by one read of the whole log (`scan`): its tail parsed, and only the lines
before it whose facts outlast the tail.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import best_trial, places, run_files, run_summary
from .events import EVAL, FINAL, FINISHED, STARTED, STEP, Event, parse_lines, read_all, tail
from .index_file import Summary
from .meta import read_meta, tags_of
from .rates import MeanRate
from .run_row import DISK_CODES, RunRow, paused_for
from .rundir import RunDir, epochs_in
from .status import last_final

#: The bytes at the end of a log read whole (`events.tail`'s): the rest is searched (`scan`).
TAIL_BYTES = 64 << 10
ROW_FIELDS = ("id", "name", "kind", "strategy", "pid", "host", "started_at", "ended_at")
NOT_METRICS = frozenset({"v", "t", "run", "type", "mem"})  # (of the `ls` row's `last`)
#: The lines of a whole log whose facts outlast its tail (`RunRow`): found by search, not parsed all.
WHOLE_LOG = (b'"eval"', b'"started"', b'"finished"', b'"failed"', b'"stopped"', b'"killed"', b'"epochs"',
             *(f'"{code}"'.encode() for code in DISK_CODES))
#: The events of a log's tail that a status and a place's row fields read (kept in `run_summary`).
STATUS_EVENTS = frozenset({STARTED, *FINAL})
#: What a status function gets: the run, its tail of events and its run.json.
StatusOf = Callable[[RunDir, list[Event], dict[str, Any]], str]




def row(run: RunDir, info: dict[str, Any], events: list[Event], status: str,
        config: dict[str, Any] | None = None, facts: RunRow | None = None,
        latest: dict[str, Any] | None = None, meta: dict[str, Any] | None = None,
        size: int | None = None) -> dict[str, Any]:
    """The run as one `ls` row: id, name, kind, strategy, pid, host, started_at, ended_at, status, last
    (the latest metrics), cause (a failure's), tags, note and size (bytes on disk). `config`: the run's,
    if already read; `facts`: its events folded (`fold`), else `events` are; `latest`: the latest metrics
    of its events (`last_metrics`), else of `events`; `meta` (meta.json) and `size`, if already read."""
    facts = fold(events) if facts is None else facts
    last = last_metrics(events) if latest is None else dict(latest)
    if facts.samples_per_s is not None:  # the run's mean, not its last window's (`rates`)
        last["samples_per_s"] = facts.samples_per_s
    if info.get("kind") == "tune":  # a search's result is its best trial's, as the console's row says
        last.update(search_result(run.events))
    # a training run's total, as the console's row (a script's: its events', as they last said it)
    total = run.epochs(info) if config is None else epochs_in(info, config)
    total = facts.epochs if total is None else total
    if total:
        last["epochs"] = total
    out = {k: info.get(k) for k in ROW_FIELDS}
    meta = read_meta(run) if meta is None else meta
    out.update(id=run.id, status=status, last=last, tags=tags_of(meta), note=str(meta.get("note") or ""),
               size=disk_size(run.path) if size is None else size)
    paused = paused_for(status, facts.disk_full)  # as the console's row says it
    if paused:
        out["paused"] = paused
    if status in FINAL.values() and last_final(events)[0] != status:  # its place wrote how it ended
        events = tail(run.events)  # while its status was derived (Slurm's word): the row says it too
    failure = next((e for e in reversed(events) if e.get("type") == "failed"), None)
    if failure is not None and status == "failed":
        out["cause"] = failure.get("cause")
    place = places.of(info)  # e.g. a Slurm run's job, nodes, and while it waits Slurm's reason
    fields = place.row_fields(info, status, events)
    if fields is not None:
        out[place.info_key or place.name] = fields
    return out


def last_metrics(events: list[Event]) -> dict[str, Any]:
    """The latest value of each metric the steps, evals and final word of `events` carry."""
    last: dict[str, Any] = {}
    for event in events:
        if event.get("type") in (STEP, EVAL, FINISHED):
            last.update({k: v for k, v in event.items() if k not in NOT_METRICS})
    return last


def search_result(path: Path) -> dict[str, Any]:
    """A search's best trial's metric (under the metric's name) and its trial count, from its whole log
    (a search's log is its trials' results: small): the trial its `finished` names, else the best of
    every trial's best (`best_trial`: the rule of the console's leaderboard too)."""
    metric, mode, best, named = "val_acc", "max", {}, None
    for event in read_all(path):
        kind = event.get("type")
        if kind == "started" and event.get("metric"):
            metric, mode = str(event["metric"]), event.get("mode", "max")
        elif kind == "trial" and event.get("trial_id"):
            value = (event.get("metrics") or {}).get(metric)
            trial = str(event["trial_id"])
            if best_trial.is_metric(value) and best_trial.better(value, best.get(trial), mode):
                best[trial] = value
            best.setdefault(trial, None)
        elif kind == FINISHED and event.get("best_trial"):
            named = str(event["best_trial"])
    if all(v is None for v in best.values()):
        return {}
    return {metric: best.get(best_trial.best_of(best, mode, named) or ""), "trials": len(best)}


def summarize(run: RunDir, status_of: StatusOf, found: run_files.RunFiles | None = None,
              keeps: Callable[[dict[str, Any], str], bool] | None = None) -> Summary:
    """A run's whole summary, derived from its files now (`found`: one look at them, if taken; `keeps`:
    whether its row and fingerprint may be kept in the index, judged now: `Summary.keep`)."""
    # one look before reading: a change meanwhile leaves the summary stale, never wrong
    found = run_files.look(os.fspath(run.path)) if found is None else found
    if found is None:  # (no run.json: what `RunDir.read_info` reads of a run without one)
        key = run_files.fingerprint(os.fspath(run.path))
        found = run_files.RunFiles(key, "", disk_size(run.path), None, None, _bytes(run.config), None)
    info, meta = run_files.loads_dict(found.info), run_files.loads_dict(found.meta)
    parts = run_summary.parse(found.summary, found.log_key) if found.log_key else None
    if parts is None or not RunRow.has_facts(parts["facts"]):  # (not: a summary of fewer facts)
        parts = _read_parts(run.events)
    facts, events = RunRow(), parts["events"]
    facts.take_facts(parts["facts"])
    text = _text(found.config)
    config = _parsed_or_empty(text)  # once: TOML is most of a summary's cost
    ls_row = row(run, info, events, status_of(run, events, info), config, facts, parts["last"], meta,
                 found.size)
    # the facts of its events, and of its run.json beyond the `ls` row (a resumed run's earlier seconds)
    more = {"ran_s": info.get("ran_s")}
    details = (json.dumps(parts["best"]), _flat_text(text))  # (as json.dumps writes them whole)
    return Summary(run.id, found.key, json.dumps(ls_row), None,
                   facts_text=json.dumps({**parts["facts"], **more}),
                   keep=None if keeps is None else keeps(ls_row, found.key), details_parts=details)


def log_parts(run: RunDir) -> dict[str, Any]:
    """What the run's log gives its row (`run_summary.PARTS`): from the summary beside the log while it
    is true, else read from the log now."""
    kept = run_summary.read(os.fspath(run.path))
    if kept is not None and RunRow.has_facts(kept["facts"]):  # (not: a summary of fewer facts)
        return kept
    return _read_parts(run.events)


def keep_log_summary(run: RunDir) -> None:
    """Write the summary of the run's log beside it (`run_summary`: the run does, as it ends), unless the
    log is over `run_summary.WRITE_MAX_BYTES` (its reading would hold the run's exit, and a `stop`)."""
    path = os.fspath(run.path)
    key = run_summary.log_key(path)  # before reading: a change meanwhile leaves it stale, never wrong
    if key and int(key.split(",")[0]) <= run_summary.WRITE_MAX_BYTES:
        run_summary.write(path, key, _read_parts(run.events))


def _read_parts(path: Path) -> dict[str, Any]:
    best, before, events = scan(path)
    return {"best": best, "facts": fold(before, events).facts(), "last": last_metrics(events),
            "events": [e for e in events if e.get("type") in STATUS_EVENTS]}


def fold(*parts: list[Event]) -> RunRow:
    """The row's facts (`RunRow`) of these parts of a log, in order: the lines before its tail whose
    facts outlast it (`scan`), then its tail: the facts of the whole log, as the console folds it."""
    facts = RunRow()
    for part in parts:
        for event in part:
            facts.apply(event)
    return facts


def best_metrics(path: Path) -> dict[str, Any]:
    """The best `val_acc` (highest) and `val_loss` (lowest) of every eval in the log, with their epochs."""
    return scan(path)[0]


def scan(path: Path) -> tuple[dict[str, Any], list[Event], list[Event]]:
    """One read of the whole log, parsing its tail (`events.tail`'s) and, before it, only the first line
    and those whose facts outlast the tail (`WHOLE_LOG`; the rated steps of one whose tail carries no
    totals: a log of megabytes of a trainer's steps costs one read): the best metrics, those events, and
    the tail's."""
    best: dict[str, Any] = {}
    try:
        data = path.read_bytes()
    except OSError:
        return best, [], []
    cut = max(0, len(data) - TAIL_BYTES)
    if cut > 0:  # as `events.tail`: from after the next newline (its first line may be cut)
        cut = data.find(b"\n", cut) + 1 or len(data)
    end = data.rfind(b"\n")
    events = parse_lines([line for line in data[cut:max(end, cut)].split(b"\n") if line])[0]
    rate = MeanRate()
    for event in events:
        rate.add(event)
    # its mean rate is its last totals (samples over seconds) if its tail has them, else every step's
    needles = WHOLE_LOG if rate.totals is not None else (*WHOLE_LOG, b'"samples_per_s"', b'"train_s"')
    before = [e for e in map(_event, _lines_with(data[:cut], needles)) if e is not None]
    head = _event(data[:data.find(b"\n")]) if cut > 0 else None
    if head is not None and (not before or before[0] != head):
        before.insert(0, head)  # its time is the run's first
    for event in (*before, *events):
        if event.get("type") == EVAL:
            _better(best, event, "val_acc", max)
            _better(best, event, "val_loss", min)
    return best, before, events


def _lines_with(data: bytes, needles: tuple[bytes, ...]) -> list[bytes]:
    """The complete lines of `data` holding any of `needles`, in order (found by search, not by splitting
    every line: most of a long log is steps)."""
    starts: set[int] = set()
    for needle in needles:
        at = data.find(needle)
        while at >= 0:
            start = data.rfind(b"\n", 0, at) + 1
            starts.add(start)
            end = data.find(b"\n", at)
            if end < 0:
                break  # a half-written last line
            at = data.find(needle, end)
    lines = []
    for start in sorted(starts):
        end = data.find(b"\n", start)
        if end >= 0:
            lines.append(data[start:end])
    return lines


def _event(line: bytes) -> Event | None:
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) and "type" in event else None  # (as `EventReader`)


def _better(best: dict[str, Any], event: Event, name: str, pick: Callable[..., float]) -> None:
    value = event.get(name)
    if not isinstance(value, (int, float)) or value != value:  # NaN never wins
        return
    if name not in best or pick(value, best[name]) != best[name]:
        best[name], best[f"{name}_epoch"] = value, event.get("epoch")


def flat_config(path: Path) -> dict[str, Any]:
    """The run's config as dotted keys (`train.lr`), scalars and lists only ({} if unreadable)."""
    return flatten(read_config(path))


def read_config(path: Path) -> dict[str, Any]:
    """The run's config ({} if unreadable). Not to be changed: runs of one config file share it."""
    return _parsed_or_empty(_text(_bytes(path)))


def _bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _text(data: bytes | None) -> str | None:
    try:
        return None if data is None else data.decode()
    except ValueError:
        return None


def _parsed_or_empty(text: str | None) -> dict[str, Any]:
    try:
        return {} if text is None else _parsed(text)
    except ValueError:
        return {}


@functools.lru_cache(maxsize=64)
def _parsed(text: str) -> dict[str, Any]:
    """TOML parsed once per distinct text (the runs of one config file, in a listing that summarizes
    many, are parsed once)."""
    return tomllib.loads(text)


@functools.lru_cache(maxsize=64)
def _flat_text(text: str | None) -> str:
    """A config's dotted keys as JSON text, once per distinct text."""
    return json.dumps(flatten(_parsed_or_empty(text)))


def flatten(config: dict[str, Any]) -> dict[str, Any]:
    """A config as dotted keys (`train.lr`), scalars and lists only."""
    flat: dict[str, Any] = {}
    for section, table in config.items():
        if not isinstance(table, dict):
            flat[section] = table
            continue
        for key, value in table.items():
            if not isinstance(value, dict):
                flat[f"{section}.{key}"] = value
    return flat


def disk_size(path: Path) -> int:
    """Bytes of every file under `path` (checkpoints, logs, events)."""
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(folder, name)).st_size
    return total
