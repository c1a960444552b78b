"""The console's look at runs' tags and notes: bounded per look at any home size, every run in turn, the
selected run at every look."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.services import run_meta
from console.services.run_meta import MetaWatch
from trainers.protocol import RunDir
from trainers.protocol.meta import update_meta


def tag(home: Path, run_id: str, name: str) -> None:
    update_meta(RunDir(home / "runs" / run_id), lambda meta: {**meta, "tags": [name]})


def test_a_big_home_is_looked_at_in_turns_and_the_selected_run_at_every_look(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run_meta, "PER_LOOK", 4)
    ids = [f"run-{i:02d}" for i in range(10)]
    for run_id in ids:
        (tmp_path / "runs" / run_id).mkdir(parents=True)
        tag(tmp_path, run_id, "first")
    watch = MetaWatch(tmp_path)
    seen = [set(watch.look(ids)) for _ in range(3)]  # first looks: every run's tags once, 4 at a time
    assert [len(s) for s in seen] == [4, 4, 2] and set().union(*seen) == set(ids)
    tag(tmp_path, "run-07", "baseline")
    tag(tmp_path, "run-01", "old")
    found = {}
    for _ in range(3):  # a whole turn: each tag found once
        found.update(watch.look(ids, first=("run-01",)))
        assert "run-01" in found  # the selected run: at the first look after its change
    assert found["run-07"].tags == ["baseline"] and found["run-01"].tags == ["old"]
    assert not any(watch.look(ids, first=("run-01",)) for _ in range(3))  # nothing changed since
