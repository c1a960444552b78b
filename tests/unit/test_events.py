"""The event log is the queue: concurrent appends stay whole, readers skip half-written lines."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import stat
import threading
from pathlib import Path

from trainconsole import protocol
from trainconsole.protocol import EventReader, EventWriter


def append_many(path: str, writer_id: int, n: int) -> None:
    log = EventWriter(path, f"run-{writer_id}")
    for i in range(n):
        log.emit("step", writer=writer_id, step=i, loss=1.0 / (i + 1), pad="x" * (i % 300))
    log.close()


def test_two_processes_append_10000_events_each_without_tearing(tmp_path: Path) -> None:
    path = str(tmp_path / "events.jsonl")
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=append_many, args=(path, w, 10_000)) for w in (0, 1)]
    for p in procs:
        p.start()
    reader, seen = EventReader(path), []
    while any(p.is_alive() for p in procs):
        seen += reader.read()
    for p in procs:
        p.join()
    seen += reader.read()
    assert len(seen) == 20_000 and reader.bad_lines == 0
    for w in (0, 1):
        assert [e["step"] for e in seen if e["writer"] == w] == list(range(10_000))


def test_half_written_last_line_waits_until_complete(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    line = json.dumps(protocol.make_event("r", "step", step=1, loss=0.5))
    path.write_text(line + "\n" + line[:17])
    reader = EventReader(path)
    assert [e["step"] for e in reader.read()] == [1]
    assert reader.read() == [] and reader.bad_lines == 0
    with open(path, "a") as f:
        f.write(line[17:] + "\n")
    assert [e["step"] for e in reader.read()] == [1]


def test_garbage_lines_are_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text('{"type":"step","step":1}\nnot json\n[1,2]\n{"type":"eval","epoch":1}\n')
    reader = EventReader(path)
    assert [e["type"] for e in reader.read()] == ["step", "eval"] and reader.bad_lines == 2


def test_tail_reads_only_the_end(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = EventWriter(path, "r")
    for i in range(5000):
        log.emit("step", step=i)
    events = protocol.tail(path, nbytes=4096)
    assert events[-1]["step"] == 4999 and 0 < len(events) < 100
    assert [e["step"] for e in events] == list(range(events[0]["step"], 5000))


def test_home_and_run_dirs_are_private(home: Path) -> None:
    root = protocol.home()
    run = protocol.RunDir.create(root, protocol.new_run_id("my run/1"))
    assert root == home and "/" not in run.id
    for path in (root, run.path, run.checkpoints):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o700
    EventWriter(run.events, run.id).emit("started")
    assert stat.S_IMODE(os.stat(run.events).st_mode) == 0o600


def test_two_threads_emitting_at_once_write_each_event_once(tmp_path: Path) -> None:
    """The training thread and the cost meter's thread emit into one writer: before the lock, a write
    released the GIL between writing the oldest waiting line and popping it, so the other thread wrote it
    again and a pop found the list empty (a 78-minute run died of it: IndexError)."""
    writer = EventWriter(tmp_path / "events.jsonl", "r1")
    errors: list[BaseException] = []

    def emit_many(who: str) -> None:
        try:
            for i in range(20_000):
                writer.emit("step", who=who, i=i)
        except BaseException as e:  # noqa: BLE001 - the test reports it
            errors.append(e)

    threads = [threading.Thread(target=emit_many, args=(who,)) for who in ("loop", "cost")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    writer.close()
    written = [(e["who"], e["i"]) for e in protocol.read_all(tmp_path / "events.jsonl")]
    assert not errors and len(written) == 40_000 and len(set(written)) == 40_000


def emit_from_rank(writer: EventWriter, rank: int) -> None:
    writer.emit("step", rank=rank)
    writer.close()


def test_a_writer_sent_to_a_spawned_rank_writes_there(tmp_path: Path) -> None:
    """DDP ranks and Ray actors get the run's writer pickled: its lock (and descriptor) stay behind and
    the rank makes its own (the lock, unpicklable, once failed every DDP run)."""
    writer = EventWriter(tmp_path / "events.jsonl", "r1")
    writer.emit("step", rank=-1)
    proc = mp.get_context("spawn").Process(target=emit_from_rank, args=(writer, 0))
    proc.start()
    proc.join(60)
    writer.emit("step", rank=-2)
    writer.close()
    assert proc.exitcode == 0
    assert [e["rank"] for e in protocol.read_all(tmp_path / "events.jsonl")] == [-1, 0, -2]
