"""Lightning CSVLogger's metrics.csv read exactly: every row once, at its step and epoch, as it grows, is
rewritten under a longer header and ends (captured from real Lightning, and a script run)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from script_helpers import FIXTURES, cli, of_type

from trainconsole.protocol import EventWriter
from trainconsole.trainers.scripts.file_tail import Listings
from trainconsole.trainers.scripts.lightning_csv import LightningCsvTail, row_events
from trainconsole.trainers.scripts.output import OutputEvents, Pump

CAPTURED = FIXTURES / "captured"


class Collected:
    """An `emit` that keeps (kind, fields) as the runner's writer would get them."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, kind: str, **fields: Any) -> None:
        self.events.append((kind, fields))


def tail(folder: Path, since: float = 0.0) -> tuple[LightningCsvTail, Collected]:
    got = Collected()
    return LightningCsvTail([folder], since, got), got


def write(path: Path, text: str) -> None:
    """Write the file in place, as Lightning does (same inode), with a new modification time."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        f.write(text)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


def test_row_fields_go_where_their_names_say() -> None:
    row = {"epoch": "1", "step": "9", "train_loss": "0.5", "train_acc_step": "0.75", "train_acc_epoch": "",
           "val_loss": "", "lr-SGD": "0.1", "time_s": "2.0"}
    assert row_events(row) == [("step", {"step": 9, "epoch": 1, "loss": 0.5, "acc": 0.75, "lr_sgd": 0.1,
                                         "source": "lightning_csv", "timing": {"time_s": 2.0}})]
    end = {"epoch": "1", "step": "9", "train_acc_epoch": "0.8", "val_accuracy": "0.7", "test_loss": "0.4"}
    at = {"step": 9, "epoch": 1, "source": "lightning_csv"}
    assert row_events(end) == [("summary", {**at, "acc": 0.8}), ("eval", {**at, "val_acc": 0.7}),
                               ("result", {**at, "test_loss": 0.4})]
    assert row_events({"epoch": "0", "step": "", "train_loss": "1.0"}) == []  # no step: no place


def test_a_growing_and_rewritten_file_gives_each_row_once(tmp_path: Path) -> None:
    path = tmp_path / "version_0" / "metrics.csv"
    reader, got = tail(tmp_path)
    write(path, "epoch,step,train_loss\n0,0,1.0\n0,1,0.9\n0,2,0.")  # the last row is being written
    reader.poll()
    assert [f["loss"] for _, f in got.events] == [1.0, 0.9]
    reader.poll()  # unchanged: nothing
    write(path, "epoch,step,train_loss\n0,0,1.0\n0,1,0.9\n0,2,0.8\n")
    reader.poll()
    # a new key: the whole file again under the longer header, then the new rows
    write(path, "epoch,step,train_loss,val_loss\n0,0,1.0,\n0,1,0.9,\n0,2,0.8,\n0,2,,0.7\n1,3,0.6,\n")
    reader.poll()
    assert [(k, f["step"], f.get("loss", f.get("val_loss"))) for k, f in got.events] == [
        ("step", 0, 1.0), ("step", 1, 0.9), ("step", 2, 0.8), ("eval", 2, 0.7), ("step", 3, 0.6)]


def test_a_rewrite_read_half_written_emits_the_rest_once(tmp_path: Path) -> None:
    path = tmp_path / "version_0" / "metrics.csv"
    reader, got = tail(tmp_path)
    write(path, "epoch,step,loss\n0,0,1.0\n0,1,0.9\n0,2,0.8\n")
    reader.poll()
    write(path, "epoch,loss,step,val_loss\n0,1.0,0,\n")  # the rewrite, caught after its first row
    reader.poll()
    write(path, "epoch,loss,step,val_loss\n0,1.0,0,\n0,0.9,1,\n0,0.8,2,\n0,,2,0.75\n")
    reader.poll()
    assert [(k, f["step"]) for k, f in got.events] == [("step", 0), ("step", 1), ("step", 2), ("eval", 2)]


def test_files_from_before_the_script_started_are_not_read(tmp_path: Path) -> None:
    old = tmp_path / "version_0" / "metrics.csv"
    write(old, "epoch,step,train_loss\n0,0,1.0\n")
    os.utime(old, (1_000_000, 1_000_000))
    reader, got = tail(tmp_path, since=old.stat().st_mtime + 10)
    write(tmp_path / "version_1" / "metrics.csv", "epoch,step,train_loss\n0,0,0.5\n")
    reader.poll()
    assert [f["loss"] for _, f in got.events] == [0.5]


#: What the captured file says, row by row (lightning_csv_metrics.csv, Lightning 2.6.6): training rows
#: (train_loss -> loss, train_acc_step -> acc), the validation row and the epoch's train_acc_epoch row at
#: the epoch's last step, and trainer.test's row at the step after training.
CAPTURED_EVENTS = [
    ("step", 0, 0, {"acc": 0.625, "loss": 0.7093842625617981}),
    ("step", 1, 0, {"acc": 0.375, "loss": 0.8089880347251892}),
    ("step", 2, 0, {"acc": 0.875, "loss": 0.5446568131446838}),
    ("step", 3, 0, {"acc": 0.75, "loss": 0.5784282684326172}),
    ("eval", 3, 0, {"val_acc": 0.875, "val_loss": 0.3892020285129547}),
    ("summary", 3, 0, {"acc": 0.65625}),
    ("step", 4, 1, {"acc": 0.75, "loss": 0.42871350049972534}),
    ("step", 5, 1, {"acc": 1.0, "loss": 0.44131121039390564}),
    ("step", 6, 1, {"acc": 1.0, "loss": 0.24058407545089722}),
    ("step", 7, 1, {"acc": 0.75, "loss": 0.4327142834663391}),
    ("eval", 7, 1, {"val_acc": 0.9375, "val_loss": 0.29483598470687866}),
    ("summary", 7, 1, {"acc": 0.875}),
    ("result", 8, 2, {"test_acc": 0.9375, "test_loss": 0.29483598470687866}),
]


def shape(events: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, int, int, dict[str, Any]]]:
    rest = ("step", "epoch", "source")
    return [(k, f["step"], f["epoch"], {n: v for n, v in f.items() if n not in rest}) for k, f in events]


def test_captured_lightning_file_read_whole(tmp_path: Path) -> None:
    write(tmp_path / "lightning_logs" / "version_0" / "metrics.csv",
          (CAPTURED / "lightning_csv_metrics.csv").read_text())
    reader, got = tail(tmp_path / "lightning_logs")
    reader.poll()
    assert shape(got.events) == CAPTURED_EVENTS
    assert all(f["source"] == "lightning_csv" for _, f in got.events)


def test_captured_lightning_file_read_after_each_write_of_the_logger(tmp_path: Path) -> None:
    """The file as Lightning left it after each of its writes (appends, and rewrites under a longer
    header when val_*, train_acc_epoch and test_* appeared): every row once, none lost."""
    states = json.loads((CAPTURED / "lightning_csv_states.json").read_text())
    assert states[-1] == (CAPTURED / "lightning_csv_metrics.csv").read_text()
    path = tmp_path / "lightning_logs" / "version_0" / "metrics.csv"
    reader, got = tail(tmp_path / "lightning_logs")
    for state in states:
        write(path, state)
        reader.poll()
    assert shape(got.events) == CAPTURED_EVENTS


def test_lightnings_printed_output_gives_no_events_of_its_own(tmp_path: Path) -> None:
    """The captured run's own printing (rich bar, the test metrics table): no guessed step or result
    beside the CSV's."""
    events = OutputEvents(EventWriter(tmp_path / "events.jsonl", "r"), [])
    for name, stream in (("lightning_csv.stderr", events.stderr), ("lightning_csv.stdout", events.stdout)):
        fd, log = os.open(CAPTURED / name, os.O_RDONLY), os.open(os.devnull, os.O_WRONLY)
        Pump(fd, log, stream).run()
        os.close(fd)
        os.close(log)
    events.close()
    assert "Epoch 1/1" in (CAPTURED / "lightning_csv.stdout").read_text()
    assert not (tmp_path / "events.jsonl").exists()


def test_a_script_writing_metrics_csv_as_it_trains_is_read_as_a_run(home: Path, tmp_path: Path) -> None:
    out = cli("run", "--script", str(FIXTURES / "csv_logger_train.py"), "--wait", "--", "--epochs", "2",
              "--steps", "4", "--sleep", "0.3", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    run_id = out.stdout.split()[0]
    steps = [e for e in of_type(home, run_id, "step") if e.get("source") == "lightning_csv"]
    assert [(e["step"], e["epoch"], e["loss"]) for e in steps] == [
        (s, s // 4, round(1.0 / (s + 1), 4)) for s in range(8)]
    assert [(e["step"], e["epoch"], e["val_loss"], e["val_acc"]) for e in of_type(home, run_id, "eval")] == [
        (3, 0, 0.8, 0.5), (7, 1, 0.7, 0.7)]
    assert not [e for e in of_type(home, run_id, "step") if e.get("source") != "lightning_csv"]


def test_settled_folders_are_listed_again_only_when_they_change(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    logs = tmp_path / "lightning_logs"
    for version in range(3):
        (logs / f"version_{version}").mkdir(parents=True)
    for folder in (logs, *logs.iterdir()):
        os.utime(folder, (1_000_000, 1_000_000))  # long settled
    listed: list[str] = []
    scandir = os.scandir
    monkeypatch.setattr(os, "scandir", lambda path: listed.append(path) or scandir(path))
    listings = Listings()
    assert listings.files(str(logs), "metrics.csv") == []
    assert len(listed) == 4
    listings.files(str(logs), "metrics.csv")
    assert len(listed) == 4  # nothing changed: one stat per folder, no listing
    write(logs / "version_3" / "metrics.csv", "epoch,step,loss\n")
    assert listings.files(str(logs), "metrics.csv") == [str(logs / "version_3" / "metrics.csv")]
