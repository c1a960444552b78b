"""The run index: read back while true, rebuilt when stale or missing, never the only copy of a fact."""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from pathlib import Path
from typing import Any

import psutil

from trainconsole.control import runs
from trainconsole.protocol import EventWriter, RunDir, index, index_file
from trainconsole.protocol.meta import read_meta, tags_of, update_meta

T0 = 1_700_000_000.0
OLD = time.time() - 3600  # the one past moment settled runs are dated at, so their fingerprints repeat


def make_run(home: Path, run_id: str, final: str | None = "finished", pid: int | None = None) -> RunDir:
    (home / "runs").mkdir(parents=True, exist_ok=True)
    run = RunDir.create(home, run_id)
    run.config.write_text('[train]\nlr = 0.05\nepochs = 3\n\n[model]\nname = "small_cnn"\n')
    started = psutil.Process(pid).create_time() if pid else None
    run.write_info({"id": run_id, "name": "digits", "kind": "train", "strategy": "single", "host": "box",
                    "pid": pid, "pid_started": started, "started_at": T0, "ended_at": T0 + 9})
    log = EventWriter(run.events, run_id)
    log.emit("started", strategy="single")
    for epoch, acc in ((1, 0.8), (2, 0.93), (3, 0.91)):
        log.emit("step", step=epoch * 10, epoch=epoch, loss=1.0 / epoch, lr=0.05, samples_per_s=2000.0)
        log.emit("eval", epoch=epoch, val_loss=0.5 / epoch, val_acc=acc)
    if final:
        log.emit(final)
    log.close()
    (run.checkpoints / "last.pt").write_bytes(b"x" * 1000)
    return run


def listing(home: Path, settle: bool = True) -> list[index.Summary]:
    """Every run's summary; first (`settle`) the runs' files are dated an hour back, as they would be
    for a run that ended a while ago (a file changed this very second is never trusted to the index)."""
    if settle:
        for run in runs.all_runs(home):
            for path in (run.events, run.path, run.checkpoints):
                os.utime(path, (OLD, OLD))
    return index.summaries(home, runs.status)


def test_summaries_agree_with_the_live_ls_row_and_hold_best_and_config(tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = make_run(home, "r1")
    live = make_run(home, "r2", final=None, pid=os.getpid())
    first = listing(home)
    assert [s.row for s in first] == [runs.summary(done), runs.summary(live)]
    assert first[0].row["last"]["val_acc"] == 0.91 and first[0].best == {
        "val_acc": 0.93, "val_acc_epoch": 2, "val_loss": 0.5 / 3, "val_loss_epoch": 3}
    assert first[0].config == {"train.lr": 0.05, "train.epochs": 3, "model.name": "small_cnn"}
    assert first[0].row["size"] > 1000 and first[0].row["host"] == "box"
    assert set(index.load(home)) == {"r1"}  # only an ended run is kept: a live one is derived each time


def test_an_entry_is_read_back_while_its_run_is_unchanged_and_rebuilt_when_it_changes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    run = make_run(home, "r1")
    listing(home)
    mark(home)
    assert listing(home)[0].row["name"] == "from-the-index"
    EventWriter(run.events, "r1").emit("warning", code="late")  # the log grew: stale
    assert listing(home, settle=False)[0].row["name"] == "digits"
    assert "r1" not in index.load(home)  # changed a moment ago: not trusted to the index yet
    assert listing(home)[0].row["name"] == "digits" and "r1" in index.load(home)

    mark(home)
    update_meta(run, lambda meta: {**meta, "tags": ["baseline"]})  # meta.json replaced: stale
    assert listing(home, settle=False)[0].row["tags"] == ["baseline"]

    size = listing(home)[0].row["size"]
    mark(home)
    run.last_ckpt.unlink()  # pruned: stale, and the size says so
    row = listing(home, settle=False)[0].row
    assert row["name"] == "digits" and row["size"] == size - 1000


def test_a_missing_or_broken_index_is_rebuilt_to_the_same_rows(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for i in range(3):
        make_run(home, f"r{i}", final=("finished", "failed", "stopped")[i])
    rows = [s.row for s in listing(home)]
    (home / index_file.ROWS).unlink()
    assert [s.row for s in listing(home)] == rows
    key = index.fingerprint(str(home / "runs" / "r0"))  # a matching fingerprint, a row cut short
    (home / index_file.ROWS).write_text(f"{index_file.HEADER}\nr0\t{key}\t{{\"id\": \"r0\", \"na")
    assert [s.row for s in listing(home)] == rows
    assert set(index.load(home)) == {"r0", "r1", "r2"}
    assert [r["status"] for r in rows] == ["finished", "failed", "stopped"]


def test_a_deleted_run_leaves_the_index(tmp_path: Path) -> None:
    home = tmp_path / "home"
    make_run(home, "r1")
    gone = make_run(home, "r2")
    listing(home)
    os.rename(gone.path, tmp_path / "elsewhere")
    assert [s.id for s in listing(home)] == ["r1"] and set(index.load(home)) == {"r1"}


def mark(home: Path) -> None:
    """Rename r1 in the index only: a mark that only a listing read from the index can show."""
    saved = index.load(home)
    row = {**saved["r1"].row, "name": "from-the-index"}
    saved["r1"] = index.Summary.of("r1", saved["r1"].key, row, saved["r1"].best, saved["r1"].config)
    index.save(home, saved)


def _slow_tag(path: str, tag: str) -> None:
    def change(meta: dict[str, Any]) -> dict[str, Any]:
        time.sleep(0.2)  # every writer reads before any writes, unless the lock orders them
        return {**meta, "tags": [*tags_of(meta), tag]}

    update_meta(RunDir(path), change)


def test_concurrent_meta_updates_all_land(tmp_path: Path) -> None:
    run = make_run(tmp_path / "home", "r1")
    procs = [multiprocessing.get_context("fork").Process(target=_slow_tag, args=(str(run.path), f"t{i}"))
             for i in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(10)
    assert tags_of(read_meta(run)) == ["t0", "t1", "t2", "t3"]
    assert json.loads((run.path / "meta.json").read_text())["tags"]
