"""The console's look at runs' tags and notes: bounded per look at any home size, every run in turn, the
selected run at every look."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainconsole.console.services import run_meta
from trainconsole.console.services.run_meta import MetaWatch
from trainconsole.protocol import RunDir
from trainconsole.protocol.meta import update_meta


def tag(home: Path, run_id: str, name: str) -> None:
    update_meta(RunDir(home / "runs" / run_id), lambda meta: {**meta, "tags": [name]})


def home_of(home: Path, count: int, tagged: str = "") -> list[str]:
    """`count` run folders (each tagged `tagged`, if given); their ids."""
    ids = [f"run-{i:02d}" for i in range(count)]
    for run_id in ids:
        (home / "runs" / run_id).mkdir(parents=True)
        if tagged:
            tag(home, run_id, tagged)
    return ids


def test_a_big_home_is_looked_at_in_turns_and_the_selected_run_at_every_look(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run_meta, "PER_LOOK", 4)
    ids = home_of(tmp_path, 10, tagged="first")
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


def test_a_run_the_control_layer_changed_is_looked_at_in_the_next_look_whatever_its_turn(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from trainconsole.control import Control

    monkeypatch.setattr(run_meta, "PER_LOOK", 4)
    ids = home_of(tmp_path, 40)
    watch = MetaWatch(tmp_path)
    watch.look(ids)  # runs 0-3 looked at; run-30's turn is seven looks away
    control = Control(tmp_path)
    control.tag(RunDir(tmp_path / "runs" / "run-30"), ["baseline"], [])
    control.note(RunDir(tmp_path / "runs" / "run-31"), "lr too high")
    found = watch.look(ids)
    assert found["run-30"].tags == ["baseline"] and found["run-31"].note == "lr too high"
    # a run the journal names before its row is in the table is looked at once it is
    tag(tmp_path, "run-39", "old")  # (not journalled: found in its turn only)
    (tmp_path / "runs" / "run-40").mkdir()
    control.tag(RunDir(tmp_path / "runs" / "run-40"), ["restored"], [])
    assert "run-40" not in watch.look(ids) and "run-39" not in watch.look(ids)
    assert watch.look([*ids, "run-40"])["run-40"].tags == ["restored"]


def test_the_change_journal_starts_afresh_when_big_and_a_reader_follows_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from trainconsole.protocol import changes

    monkeypatch.setattr(changes, "MAX_BYTES", 100)
    feed = changes.ChangeFeed(tmp_path)
    changes.note_changed(tmp_path, ["a", "b"])
    assert feed.read() == ["a", "b"] and feed.read() == []
    changes.note_changed(tmp_path, [f"run-{i}" for i in range(20)])  # past 100 bytes now
    assert feed.read()[-1] == "run-19"
    changes.note_changed(tmp_path, ["c"])  # the writer started afresh: the reader reads the new file whole
    assert (tmp_path / changes.CHANGES).read_text() == "c\n" and feed.read() == ["c"]
    with open(tmp_path / changes.CHANGES, "a") as f:
        f.write("half-writ")  # a line still being written waits
    assert feed.read() == []
    with open(tmp_path / changes.CHANGES, "a") as f:
        f.write("ten\n")
    assert feed.read() == ["half-written"]
