"""The run index is never believed over a run's own files: a garbled, cut or half-written index file
reads as none, a run changed since it was indexed is derived again (in the listing's process and in the
process a big home's check is shared with), and a listing that checks in two processes lists and filters
as one does. The one look at a run (`run_files.look`) sizes and fingerprints it as the old walk did."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from test_index import OLD, listing, make_run

from trainconsole.console.filters import parse
from trainconsole.control import runs
from trainconsole.protocol import RunDir, index, index_check, index_file, run_files
from trainconsole.protocol.meta import update_meta


def rows_of(home: Path) -> list[dict]:
    return [s.row for s in listing(home)]


def test_a_garbled_index_shows_no_figure_of_its_own(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for i in range(3):
        make_run(home, f"r{i}")
    true = rows_of(home)
    path = home / index_file.ROWS
    data = path.read_bytes()
    assert b'"val_acc": 0.91' in data
    path.write_bytes(data.replace(b'"val_acc": 0.91', b'"val_acc": 0.99', 1))  # still JSON, a false figure
    assert rows_of(home) == true and all(r["last"]["val_acc"] == 0.91 for r in true)
    for cut in (len(data) // 3, len(data) // 2, len(data) - 3):  # a file cut short anywhere
        path.write_bytes(data[:cut])
        assert rows_of(home) == true
    for part in (index_file.FACTS, index_file.DETAILS):  # a garbled part is derived from the run again
        text = (home / part).read_bytes()
        (home / part).write_bytes(text.replace(b"0.93", b"0.33"))
    [summary] = [s for s in index.summaries(home, runs.status) if s.id == "r0"]
    assert summary.best["val_acc"] == 0.93 and summary.facts == json.loads(listing(home)[0].facts_text)


@pytest.mark.parametrize("share", [False, True])
def test_a_run_changed_since_it_was_indexed_is_listed_as_it_is(tmp_path: Path, share: bool,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    if share:  # the check shared with a forked process, which judges the second half of the runs
        monkeypatch.setattr(index_check, "SHARE_FROM", 2)
    home = tmp_path / "home"
    for i in range(4):
        make_run(home, f"r{i}")
    listing(home)
    assert set(index.load(home)) == {"r0", "r1", "r2", "r3"}
    update_meta(RunDir(home / "runs" / "r3"), lambda m: {**m, "tags": ["late"], "note": "seen"})
    (home / "runs" / "r2" / "checkpoints" / "last.pt").unlink()
    with open(home / "runs" / "r1" / "events.jsonl", "a") as f:  # a line more, as a resume's would be
        eval_ = {"v": 1, "t": OLD, "run": "r1", "type": "eval", "epoch": 4, "val_acc": 0.97}
        f.write(json.dumps(eval_) + "\n")
    rows = {s.id: s.row for s in index.summaries(home, runs.status)}  # (files just changed: not settled)
    assert rows["r3"]["tags"] == ["late"] and rows["r3"]["note"] == "seen"
    assert rows["r2"]["size"] < rows["r0"]["size"]
    assert rows["r1"]["last"]["val_acc"] == 0.97
    def ids(expr: str) -> list[str]:
        return [s.id for s in index.summaries(home, runs.status, wanted=parse(expr).matches)]

    assert ids("val_acc>0.95 tag:late") == [] and ids("-tag:late val_acc>0.95") == ["r1"]


def test_a_shared_check_lists_and_filters_as_one_process(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    if threading.active_count() > 1:  # a thread an earlier test left: the check is never shared (a fork
        # copies the locks other threads hold), so this test runs in a process of its own
        test = f"{__file__}::test_a_shared_check_lists_and_filters_as_one_process"
        out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test],
                             capture_output=True, text=True, timeout=300, cwd=Path(__file__).parent)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
        return
    home = tmp_path / "home"
    for i in range(9):
        make_run(home, f"r{i}", final=("finished", "failed", "stopped")[i % 3])
    for i in (2, 5):
        update_meta(RunDir(home / "runs" / f"r{i}"), lambda m: {**m, "tags": ["x"]})
    listing(home)
    alone = {f: [s.id for s in index.summaries(home, runs.status, wanted=parse(f).matches)]
             for f in ("status:failed", "tag:x", "lr<0.1 val_acc>0.9", "-r4")}
    monkeypatch.setattr(index_check, "SHARE_FROM", 2)
    parent = os.getpid()

    def judged_here(path: str) -> bool:
        assert os.getpid() == parent or "r8" not in path  # a child that fails: its share is judged here
        return True

    for expr, ids in alone.items():
        matches = parse(expr).matches
        assert [s.id for s in index.summaries(home, runs.status, wanted=matches)] == ids
        assert [s.id for s in index.summaries(home, runs.status,
                                              wanted=lambda s, m=matches: judged_here(s.id) and m(s))] == ids
    assert alone["status:failed"] == ["r1", "r4", "r7"] and alone["tag:x"] == ["r2", "r5"]
    pids = tmp_path / "pids"
    pids.mkdir()
    index.summaries(home, runs.status, wanted=lambda s: (pids / str(os.getpid())).touch() is None)
    assert {int(p.name) for p in pids.iterdir()} - {parent}, "no entry was judged by another process"


WRITER = """
import sys
from pathlib import Path
from trainconsole.protocol import index
home = Path(sys.argv[1])
found = index.load(home)
many = {f"{i}-{run_id}": s for i in range(400) for run_id, s in found.items()}
print("ready", flush=True)
while True:
    index.save(home, many)
    index.save(home, found)
"""


def test_a_writer_killed_mid_write_leaves_an_index_whole_or_none(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for i in range(3):
        make_run(home, f"r{i}")
    true = rows_of(home)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    for delay in (0.05, 0.13, 0.31):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(home)], env=env, stdout=subprocess.PIPE)
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        found = index.load(home)
        assert len(found) in (0, 3, 1200), len(found)  # the file before or after a save, never half
        assert all(s.row["id"] in ("r0", "r1", "r2") for s in found.values())
        assert rows_of(home) == true


def test_one_look_sizes_and_fingerprints_a_run_as_the_walk_does(tmp_path: Path) -> None:
    run = make_run(tmp_path / "home", "r0")
    (run.path / "tensorboard" / "deep").mkdir(parents=True)
    (run.path / "tensorboard" / "deep" / "events.out").write_bytes(b"t" * 777)
    (run.path / "link-to-file").symlink_to(run.config)
    (run.path / "link-to-dir").symlink_to(run.checkpoints)
    (run.path / "broken-link").symlink_to(run.path / "nowhere")
    found = run_files.look(str(run.path))
    assert found is not None
    assert found.size == index.disk_size(run.path)
    assert found.key == index.fingerprint(str(run.path)) != ""
    with pytest.raises(FileNotFoundError):
        os.stat(run.path / "broken-link")
    (run.path / "run.json").unlink()
    assert run_files.look(str(run.path)) is None  # not a run (yet)


def test_a_warm_listing_copies_the_rows_file_as_it_lies_and_only_while_it_holds(tmp_path: Path) -> None:
    """A warm listing of a whole home hands back the rows file's array at once (`IndexRows`): the same
    bytes as the rows joined one by one, and as a cold listing prints, its summaries made only when asked
    for; the same summaries in another order, or a listing with one run changed, are joined from their
    rows, never copied whole."""
    home = tmp_path / "home"
    for i in range(5):
        make_run(home, f"r{i}")
    cold = index_file.joined_rows(listing(home))
    warm = index.summaries(home, runs.status)
    assert isinstance(warm, index_file.IndexRows) and warm.rows._made == [None] * 5  # (none made yet)
    assert index_file.joined_rows(warm) == cold == index_file.joined_rows(list(warm))
    assert json.loads(cold) == [s.row for s in warm] == [s.row for s in listing(home)] and len(warm) == 5
    assert [s.id for s in warm[1:3]] == ["r1", "r2"] and warm[-1] is warm[4] and warm[4].id == "r4"
    backwards = list(reversed(warm))  # (a caller's own order: the file's array is not the list's)
    assert [r["id"] for r in json.loads(index_file.joined_rows(backwards))] == ["r4", "r3", "r2", "r1", "r0"]
    update_meta(RunDir(home / "runs" / "r2"), lambda m: {**m, "note": "changed"})
    changed = index.summaries(home, runs.status)
    assert not isinstance(changed, index_file.IndexRows)
    assert [r["note"] for r in json.loads(index_file.joined_rows(changed))] == ["", "", "changed", "", ""]
    listing(home)  # (the index made whole again)
    for words, ids in (("r3", ["r3"]), ("-r2", ["r0", "r1", "r3", "r4"]), ("-r0 -r4", ["r1", "r2", "r3"])):
        picked = index.summaries(home, runs.status, wanted=parse(words).matches)  # a filter of an index
        assert isinstance(picked, index_file.IndexRows) and [s.id for s in picked] == ids  # that holds
        assert [r["id"] for r in json.loads(index_file.joined_rows(picked))] == ids
        assert index_file.joined_rows(picked) == index_file.joined_rows(list(picked))  # (the same bytes)
