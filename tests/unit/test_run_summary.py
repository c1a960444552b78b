"""The summary of a run's log beside it (`summary.json`): written by the run as it ends (the real entry
point), read by the run index while it is true, and never the source of a false figure: a summary older
than its log, cut by a crash or garbled is not read, and the row is the log's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_index import listing, make_run

from trainconsole.control import runs
from trainconsole.protocol import EventWriter, RunDir, index, index_file, run_summary
from trainconsole.trainers import entry


def ended_run(home: Path) -> RunDir:
    """A run (test_index's) ended through the entry point all run kinds end through."""
    run = make_run(home, "r1", final=None)

    def body(run: RunDir, events: EventWriter, resume: bool) -> int:
        events.emit("finished", best_val_acc=0.93)
        return entry.EXIT_OK

    assert entry.main([str(run.path)], "test", "a test run", "resume", body) == entry.EXIT_OK
    return run


def summary_file(run: RunDir) -> Path:
    return run.path / run_summary.NAME


def relisted(run: RunDir, kept: dict[str, object] | str) -> index.Summary:
    """The run's summary from a listing without an index, its log summary replaced by `kept` (made true
    of the log as it is now, when a dict)."""
    if isinstance(kept, dict):
        kept = json.dumps({**kept, "log": run_summary.log_key(str(run.path))})
    summary_file(run).write_text(kept)
    (run.path.parents[1] / index_file.ROWS).unlink(missing_ok=True)
    return listing(run.path.parents[1], settle=False)[0]


def test_an_ended_run_leaves_its_summary_and_a_listing_reads_it(tmp_path: Path) -> None:
    run = ended_run(tmp_path / "home")
    kept = json.loads(summary_file(run).read_text())
    assert kept["log"] == run_summary.log_key(str(run.path)) and kept["best"]["val_acc"] == 0.93
    assert {e["type"] for e in kept["events"]} == {"started", "finished"}  # no steps, no evals
    first = listing(tmp_path / "home")[0]  # (its files aged an hour: the log's mtime changed)
    assert first.row == runs.summary(run) and first.best["val_acc"] == 0.93
    assert relisted(run, kept).row == first.row
    # the listing takes the log's figures from the summary (here made false on purpose: it shows)
    kept["best"]["val_acc"], kept["last"]["val_acc"] = 0.5, 0.4
    read = relisted(run, kept)
    assert read.best["val_acc"] == 0.5 and read.row["last"]["val_acc"] == 0.4


def test_a_summary_older_than_its_log_is_not_read(tmp_path: Path) -> None:
    run = ended_run(tmp_path / "home")
    kept = json.loads(summary_file(run).read_text())
    log = EventWriter(run.events, run.id)
    log.emit("started", strategy="single")  # resumed: a better epoch, then its end
    log.emit("eval", epoch=4, val_loss=0.1, val_acc=0.97)
    log.emit("finished", best_val_acc=0.97)
    log.close()
    summary = relisted(run, json.dumps(kept))  # (as the run left it)
    assert summary.best["val_acc"] == 0.97 and summary.row["last"]["val_acc"] == 0.97
    assert summary.row == runs.summary(run)


@pytest.mark.parametrize("damage", ["cut", "garbage", "empty", "other version", "wrong shape"])
def test_a_cut_or_garbled_summary_is_not_read(tmp_path: Path, damage: str) -> None:
    run = ended_run(tmp_path / "home")
    kept = json.loads(summary_file(run).read_text())
    kept["best"]["val_acc"] = 0.5  # a false figure, were any of it read
    text = json.dumps({**kept, "log": run_summary.log_key(str(run.path))})
    bad = {"cut": text[: len(text) - 2], "garbage": "\x00garbage", "empty": "",
           "other version": {**kept, "v": run_summary.VERSION + 1}, "wrong shape": {**kept, "events": {}}}
    summary = relisted(run, bad[damage])
    assert summary.best["val_acc"] == 0.93 and summary.row == runs.summary(run)
    assert index.log_parts(run)["best"]["val_acc"] == 0.93


def test_a_log_over_the_limit_is_left_to_the_listing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run_summary, "WRITE_MAX_BYTES", 100)  # (the test run's log: some 800 bytes)
    run = ended_run(tmp_path / "home")
    assert not summary_file(run).exists()
    summary = listing(tmp_path / "home")[0]
    assert summary.best["val_acc"] == 0.93 and summary.row == runs.summary(run)
