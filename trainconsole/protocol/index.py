"""The run index: one summary per ended run in the home (stdlib only; the files: `index_file.py`).

A summary is what `ls`, filters and the console's first rows need (the `ls` row: status, latest
metrics, size, tags; the best metrics; the config's keys), so that listing a home of 10,000 runs reads
one file and stats each run instead of replaying every log.

It is a cache, never the only copy of a fact: each entry is derived from the run's own files and
carries their fingerprint (events.jsonl's size and mtime, the run directory's and its checkpoints'
mtimes: run.json, meta.json and checkpoints are replaced by rename, which touches their directory); an
entry whose fingerprint no longer matches is rebuilt, and a missing or unreadable index is rebuilt from
the runs. Only runs with a final status whose files have been still for a few seconds are kept: a live
run's row is derived afresh each time.
"""

from __future__ import annotations

import functools
import gc
import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from . import places, run_files
from .events import FINAL
from .index_check import STALE, WANTED, verdicts
from .index_file import FACTS, IndexFiles, IndexRows, Summary
from .index_rows import (  # noqa: F401 (the index's derivation, named here as callers have named it: index.row)
    ROW_FIELDS,
    TAIL_BYTES,
    StatusOf,
    best_metrics,
    disk_size,
    flat_config,
    flatten,
    fold,
    keep_log_summary,
    last_metrics,
    log_parts,
    read_config,
    row,
    scan,
    search_result,
    summarize,
)
from .run_files import fingerprint  # noqa: F401 (index.fingerprint, as callers name it)
from .rundir import RunDir

#: Runs to derive per process before a listing shares the work among processes (`derive`).
POOL_FROM = 400
#: Most runs a pool's process derives per task (`derive`).
CHUNK = 500
#: Seconds after its last change before a run's summary is kept (see `settled`).
SETTLE_S = 2.0


def settled(key: str) -> bool:
    """Whether a fingerprint can be trusted later: a file changed within the last SETTLE_S could change
    again within the filesystem's clock tick and keep its mtime (git's "racily clean" entries)."""
    return bool(key) and max(int(n) for n in key.split(",")[1:]) < time.time_ns() - SETTLE_S * 1e9


def files(home: Path) -> IndexFiles:
    """The home's index files; a summary's facts or details missing there are derived from its run."""

    def derive(summary: Summary, name: str) -> str:
        run = RunDir(home / "runs" / summary.id)
        if name == FACTS:
            return json.dumps({**log_parts(run)["facts"], "ran_s": run.read_info().get("ran_s")})
        return json.dumps({"best": log_parts(run)["best"], "config": flat_config(run.config)})

    return IndexFiles(home, derive)


def load(home: Path) -> dict[str, Summary]:
    """The index's summaries by run id ({} if missing or unreadable)."""
    return files(home).load()


def save(home: Path, summaries: dict[str, Summary]) -> None:
    """Replace the index with these summaries."""
    files(home).save(summaries)


def summaries(home: Path, status_of: StatusOf, runs: list[RunDir] | None = None,
              wanted: Callable[[Summary], bool] | None = None) -> Sequence[Summary]:
    """Each run's summary (every run of the home, oldest first, when `runs` is None), from the index
    where its fingerprint still matches, else derived now (and kept in the index when the run has ended
    and its files are settled); `wanted` (a filter): only those it wants, tested as the index is checked.
    The index is rewritten only when it changed; a full listing also drops the entries of runs that are
    gone. The cyclic GC is paused meanwhile: a listing makes a few objects a run (100,000 runs' rows,
    decoded for a filter, are kept), none of which forms a cycle, and each collection would scan them
    all (a filter over 100,000 runs took twice as long)."""
    paused = gc.isenabled()
    gc.disable()
    try:
        return _summaries(home, status_of, runs, wanted)
    finally:
        if paused:
            gc.enable()


def _summaries(home: Path, status_of: StatusOf, runs: list[RunDir] | None,
               wanted: Callable[[Summary], bool] | None) -> Sequence[Summary]:
    index = files(home)
    rows = index.rows()  # (its summaries are made only where asked for)
    if runs is None:
        ids, root = _run_names(home), os.fspath(home / "runs")
        paths = [f"{root}/{name}" for name in ids]
    else:
        paths = [os.fspath(r.path) for r in runs]
        ids = [path.rpartition("/")[2] for path in paths]
    whole = ids == rows.ids  # the home's runs are the index's, in its order (so each once)
    where = range(len(ids)) if whole else [rows.position.get(i) for i in ids]
    keys = rows.keys if whole else [None if n is None else rows.keys[n] for n in where]
    judged = verdicts(paths, keys, wanted, lambda i: rows.summary(where[i]))
    if runs is None and whole and STALE not in judged:  # the index holds, whole: nothing to derive, keep
        if wanted is None:  # or drop; copied out as one piece
            return IndexRows(rows)
        return IndexRows(rows, [n for n, verdict in enumerate(judged) if verdict == WANTED])
    old = rows.summaries()
    derived = derive([p for p, verdict in zip(paths, judged, strict=True) if verdict == STALE], status_of)
    kept: dict[str, Summary] = {} if runs is None else dict(old)
    out: list[Summary] = []
    for path, run_id, verdict in zip(paths, ids, judged, strict=True):
        summary = old[run_id] if verdict != STALE else derived[path]
        if summary is None:
            continue  # not a run (yet): a directory being created
        kept.pop(run_id, None)
        if verdict != STALE or keeps(summary):
            kept[run_id] = summary
        if verdict == WANTED or (verdict == STALE and (wanted is None or wanted(summary))):
            out.append(summary)
    if kept.keys() != old.keys() or any(kept[i] is not old.get(i) for i in kept):
        index.save(kept)
    return out


def derive(paths: list[str], status_of: StatusOf) -> dict[str, Summary | None]:
    """Each run's summary derived now (None: not a run yet, no run.json); many runs (POOL_FROM) are
    shared among a pool of processes, one per core: the first listing of a big home is CPU-bound."""
    workers = min(os.cpu_count() or 1, len(paths) // POOL_FROM)
    if workers < 2 or not _picklable(status_of):
        return {path: _derived(path, status_of) for path in paths}
    import multiprocessing  # (here: a listing that derives few runs never pays for it)
    import threading

    # fork is the cheapest start, but a process with threads (the console) may hold a lock a fork copies
    start = "fork" if threading.active_count() == 1 else "spawn"
    with multiprocessing.get_context(start).Pool(workers) as pool:
        # small enough that a core left idle at the end is soon fed (500 runs: ~0.1 s), and few enough
        chunk = max(1, min(CHUNK, len(paths) // (workers * 8)))
        found = pool.map(functools.partial(_derived_parts, status_of=status_of), paths, chunksize=chunk)
    return {path: None if got is None else Summary.derived(*got)
            for path, got in zip(paths, found, strict=True)}


def _derived_parts(path: str, status_of: StatusOf) -> tuple[Any, ...] | None:
    """`_derived`'s summary as the texts it is made of (a pool's process hands back a tuple of strings:
    a third of the unpickling of a Summary's attributes, 100,000 times)."""
    found = _derived(path, status_of)
    if found is None:
        return None
    return (found.id, found.key, found.row_bytes, found._best_text, found._config_text, found.facts_text,
            found.keep)  # (`summarize` makes the details' two parts)


def _derived(path: str, status_of: StatusOf) -> Summary | None:
    found = run_files.look(path)
    return None if found is None else summarize(RunDir(path), status_of, found, keeps_row)


def _picklable(status_of: StatusOf) -> bool:
    """A status function a pool's process can be handed (a module's function; not a test's lambda)."""
    import pickle

    try:
        pickle.dumps(status_of)
    except (pickle.PicklingError, AttributeError, TypeError):
        return False
    return True


def keeps(summary: Summary) -> bool:
    """Whether a summary derived now can be kept: its run has ended, its files are settled, and for a
    run whose place may still change how it ended, that time has passed (`Place.late_word_s`: for a Slurm
    run an outside `scancel` turns the run's own `stopped` into `killed` a moment after it). (Judged as
    it was derived, where it was: `Summary.keep`.)"""
    return keeps_row(summary.row, summary.key) if summary.keep is None else summary.keep


def keeps_row(ls_row: dict[str, Any], key: str) -> bool:
    """`keeps`, of a summary's row and fingerprint."""
    if ls_row["status"] not in FINAL.values() or not settled(key):
        return False
    late = places.of(ls_row).late_word_s
    return not late or time.time() - (ls_row.get("ended_at") or 0.0) >= late


def _run_names(home: Path) -> list[str]:
    """The names in the home's `runs`, sorted (oldest first). Not only directories: a name that is not
    a run's directory has no fingerprint, so it is looked at (`run_files.look`) and left out."""
    try:
        return sorted(os.listdir(home / "runs"))
    except OSError:
        return []


def forget(home: Path, run_id: str) -> None:
    """Drop one run's entry (a run deleted or moved); the next listing would notice anyway."""
    index = files(home)
    found = index.load()
    if found.pop(run_id, None) is not None:
        index.save(found)
