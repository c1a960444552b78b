"""The run index's first listing of a big home: runs derived by a pool of processes give the rows one
process gives; the tail read in one parse (`events.parse_lines`, the console's reader too) reads a garbled
line as the line-by-line reader did."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from test_index import listing, make_run

from trainconsole.control import runs
from trainconsole.protocol import Event, RunDir, index, index_file
from trainconsole.protocol.events import parse_lines

PIDS = "TEST_INDEX_PIDS"


def status_noting_pid(run: RunDir, events: list[Event] | None = None,
                      info: dict[str, Any] | None = None) -> str:
    """`runs.status`, noting which process asked (a file per pid under $TEST_INDEX_PIDS)."""
    Path(os.environ[PIDS], str(os.getpid())).touch()
    return runs.status(run, events, info)


def test_a_pool_derives_the_rows_one_process_derives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, pids = tmp_path / "home", tmp_path / "pids"
    pids.mkdir()
    monkeypatch.setenv(PIDS, str(pids))
    for i in range(8):
        make_run(home, f"r{i}", final=("finished", "failed", "stopped", None)[i % 4])
    alone = [s.row_text for s in listing(home)]
    (home / index_file.ROWS).unlink()
    monkeypatch.setattr(index, "POOL_FROM", 2)  # 8 runs: a pool of 2 (the cores here)
    pooled = index.summaries(home, status_noting_pid)
    assert [s.row_text for s in pooled] == alone
    assert [s.details_text for s in pooled] == [s.details_text for s in listing(home, settle=False)]
    assert {int(p.name) for p in pids.iterdir()} - {os.getpid()}, "no run was derived by another process"
    assert len(index.load(home)) == 6  # the ended runs kept, as one process keeps them


@pytest.mark.parametrize("garbled", [[b"{two},{two}"],
                                     [b"{two},{two}", b'{"type": "eval"', b"garbage", b"  "]])
def test_a_garbled_tail_reads_as_line_by_line(tmp_path: Path, garbled: list[bytes]) -> None:
    home = tmp_path / "home"
    run = make_run(home, "r1")
    lines = run.events.read_bytes().split(b"\n")
    two = json.dumps({"type": "eval", "epoch": 9, "val_acc": 0.99}).encode()
    # a torn write's two objects on one line are no event; a half line and garbage neither
    lines[2:2] = [line.replace(b"{two}", two) for line in garbled]
    run.events.write_bytes(b"\n".join(lines))
    summary = listing(home)[0]
    assert summary.best["val_acc"] == 0.93
    assert summary.row == runs.summary(run)
    assert parse_lines(lines[:2]) == ([json.loads(line) for line in lines[:2]], 0)
