"""A home of many ended runs (issue 26): the console's rows come from the run index, their logs unread,
and are the rows their logs give; a run's history is read when it is wanted, a stale entry's log at once.

The home is made as `benchmarks/many_runs.py` makes it: copies of one real finished digits run (its files
hard-linked, a run.json of its own), one with a log of a few MB."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import make_app, until

from trainconsole.console.core.board import row
from trainconsole.protocol import index, index_file
from trainconsole.protocol.status import run_status

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from many_runs import add_copy, big_copy  # noqa: E402

EXE = str(Path(sys.executable).with_name("trainconsole"))
RUNS = 300


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home of RUNS copies of a real 2-epoch digits run (every 50th with a 2 MB log), indexed by `ls`."""
    base = tmp_path_factory.mktemp("many")
    out = subprocess.run([EXE, "run", "examples/digits.toml", "--set", "train.epochs=2", "--wait"],
                         env={**os.environ, "TRAINCONSOLE_HOME": str(base / "src")}, capture_output=True,
                         text=True, timeout=300, check=True)
    real = base / "src" / "runs" / out.stdout.split()[0]
    big = big_copy(real, base / "big", 2.0)
    home = base / "home"
    for i in range(RUNS):
        add_copy(home, big if i % 50 == 0 else real, i, "small-cnn-digits")
    time.sleep(index.SETTLE_S + 0.5)  # a summary is kept once its run's files are still
    index.summaries(home, run_status)  # what `trainconsole ls` does first
    assert len(index.load(home)) == RUNS
    return home


def unread(app: object) -> list[str]:
    """The runs whose logs the console has not read a byte of."""
    return [i for i, t in app.tailer.tracked.items() if t.offset < 0]  # type: ignore[attr-defined]


async def cells(home: Path) -> dict[str, tuple[str, ...]]:
    """Every run's row in the console, once it has read what it reads at start."""
    app = make_app(home)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.loaded and len(app.board.runs) == RUNS, 60, "every row")
        return {i: row(r, app.clock()) for i, r in app.board.runs.items()}


async def test_rows_come_from_the_index_unread_and_equal_the_rows_of_the_logs(many: Path,
                                                                            tmp_path: Path) -> None:
    app = make_app(many)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.loaded and len(app.board.runs) == RUNS, 60, "every row")
        await until(pilot, lambda: app.main.query_one("#runs").row_count == RUNS, 10, "the table filled")
        # Not one log read for the rows: only the selected run's, for its plot and log pane (and the first
        # row's, selected while the first rows came)
        def read() -> set[str]:
            return set(app.board.runs) - set(unread(app))

        selected = app.main.query_one("#runs").selected_id  # (its log is asked for at the frame that
        await until(pilot, lambda: selected in read(), 10, "the selected run's log")  # selects it)
        assert len(read()) <= 2
        assert {i for i, r in app.board.runs.items() if not r.summarized} <= read()
        from_index = {i: row(r, app.clock()) for i, r in app.board.runs.items()}
    bare = tmp_path / "bare"  # the same runs without an index: every log read, as before the index
    shutil.copytree(many, bare, copy_function=os.link)
    (bare / index_file.ROWS).unlink()
    (bare / index_file.DETAILS).unlink()
    from_logs = await cells(bare)
    assert from_index == from_logs
    assert {c[1] for c in from_logs.values()} == {"finished"}
    assert {c[3] for c in from_logs.values()} == {"2/2"}


async def test_a_run_s_history_is_read_when_it_is_selected_or_marked(many: Path) -> None:
    app = make_app(many)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.loaded and len(app.board.runs) == RUNS, 60, "every row")
        await until(pilot, lambda: app.main.query_one("#runs").row_count == RUNS, 10, "the table filled")
        newest = app.main.query_one("#runs").selected_id
        await until(pilot, lambda: not app.board.runs[newest].summarized, 10, "the selected run's log")
        await until(pilot, lambda: len(app.board.runs[newest].train_loss) > 0, 10, "its history")
        run = app.board.runs[newest]
        assert len(run.val_accs) == 2 and run.notes  # its plot and its log pane
        table = app.main.query_one("#runs")
        at = table.cursor_row
        await pilot.press("down", "space", "down")  # the next run marked (overlaid), the third selected
        ids = table._order[at:at + 3]
        await until(pilot, lambda: not any(app.board.runs[i].summarized for i in ids), 10,
                    "the marked and the selected runs' logs")
        assert len(unread(app)) >= RUNS - 4  # the rest still unread


async def test_a_stale_entry_is_read_from_its_log(many: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(many, home, copy_function=os.link)
    runs = sorted(p.name for p in (home / "runs").iterdir())
    stale = runs[7]
    events = home / "runs" / stale / "events.jsonl"
    lines = events.read_text().splitlines()
    finished = json.loads(lines[-1])
    warning = {**finished, "type": "warning", "code": "late", "message": "written after the index"}
    events.unlink()  # (a hard link: the other copies keep theirs)
    events.write_text("\n".join([*lines[:-1], json.dumps(warning), lines[-1]]) + "\n")
    app = make_app(home)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.loaded and len(app.board.runs) == RUNS, 60, "every row")
        assert not app.board.runs[stale].summarized and stale not in unread(app)
        assert any("written after the index" in n.text for n in app.board.runs[stale].notes)
        assert len(set(app.board.runs) - set(unread(app)) - {stale}) <= 2  # (the selected run's too)
        other = home / "runs" / runs[8] / "events.jsonl"
        text = other.read_text()
        other.unlink()  # a log of its own, then it grows while the console is open
        other.write_text(text)
        await pilot.pause(index.SETTLE_S / 4)
        with open(other, "a") as f:
            f.write(json.dumps(warning) + "\n")
        await until(pilot, lambda: not app.board.runs[runs[8]].summarized, 10, "the grown log read")
        await until(pilot, lambda: any("written after" in n.text for n in app.board.runs[runs[8]].notes), 10,
                    "its new line")


async def test_a_home_never_listed_is_indexed_by_the_console_for_its_next_start(many: Path,
                                                                               tmp_path: Path) -> None:
    bare = tmp_path / "never-listed"
    shutil.copytree(many, bare, copy_function=os.link)
    (bare / index_file.ROWS).unlink()
    (bare / index_file.DETAILS).unlink()
    app = make_app(bare)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.loaded and len(app.board.runs) == RUNS, 60, "every row")
        assert len(unread(app)) == 0  # no index: every log read
        await until(pilot, lambda: len(index.load(bare)) == RUNS, 60, "the index written")
    again = make_app(bare)
    async with again.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: again.loaded and len(again.board.runs) == RUNS, 60, "every row")
        assert len(unread(again)) >= RUNS - 2  # the next start: rows from the index, logs unread
