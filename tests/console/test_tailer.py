"""The tailer thread's reading, without the UI: growth, half lines, bad directories, vanished runs, big logs.

The tests play the app's part: take each posted `RunsRead` into a `Board`, then tell the tailer so."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from conftest import FAILED, FINISHED, LOST, RUNNING, STOPPED, T0, write_run

from trainconsole.console.core.board import Board
from trainconsole.console.services.tailer import RunsRead, Tailer
from trainconsole.console.services.tracked_run import CHUNK
from trainconsole.protocol import events as event_log


class App:
    """What the console does with the tailer's messages, minus the screen."""

    def __init__(self) -> None:
        self.board, self.messages, self.tailer = Board(), [], None

    def post(self, message: RunsRead) -> None:
        self.messages.append(message)
        for update in message.updates.values():
            self.board.take(update)
        assert self.tailer is not None
        self.tailer.taken()


def tailer(home: Path) -> tuple[Tailer, Board, list[RunsRead]]:
    app = App()
    app.tailer = Tailer(home, app.post, hold=0.0)
    return app.tailer, app.board, app.messages


def line(run_id: str, **fields: object) -> bytes:
    return (json.dumps({"v": 1, "t": T0, "run": run_id, **fields}) + "\n").encode()


def test_first_pass_reads_every_run_and_its_status(fixture_home: Path) -> None:
    t, board, _ = tailer(fixture_home)
    changed, behind = t.poll_once()
    assert changed and not behind
    status = {rid: run.status for rid, run in board.runs.items()}
    assert status == {FINISHED: "finished", FAILED: "failed", RUNNING: "running", STOPPED: "stopped",
                      LOST: "lost"}
    assert len(board.runs[FINISHED].train_loss) == 100 and board.runs[FINISHED].epochs == 5
    assert "skipped 1 unreadable line" in board.runs[LOST].notes[-1].text


def test_reads_only_what_grew_and_waits_for_half_lines(tmp_path: Path) -> None:
    run = write_run(tmp_path, "r-0001", [{"t": T0, "type": "started"}])
    t, board, _ = tailer(tmp_path)
    t.poll_once()
    assert t.poll_once() == (False, False)  # nothing grew: one stat, no read
    whole = line("r-0001", type="step", step=1, loss=0.5)
    with open(run.events, "ab") as f:
        f.write(whole[:20])
    t.poll_once()
    assert len(board.runs["r-0001"].train_loss) == 0
    with open(run.events, "ab") as f:
        f.write(whole[20:])
    changed, _ = t.poll_once()
    assert changed and board.runs["r-0001"].loss == 0.5 and board.take_dirty() == {"r-0001"}


def test_unreadable_log_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    run = write_run(tmp_path, "r-0002", [])
    run.events.unlink()
    run.events.mkdir()  # reading it fails with IsADirectoryError, even as root
    t, board, _ = tailer(tmp_path)
    t.poll_once()
    assert "cannot read events.jsonl" in board.runs["r-0002"].problem
    assert board.runs["r-0002"].notes[-1].level == "error"


def test_vanished_and_replaced_runs(tmp_path: Path) -> None:
    gone = write_run(tmp_path, "r-0003", [{"t": T0, "type": "started"}])
    kept = write_run(tmp_path, "r-0004", [{"t": T0, "type": "step", "step": 5, "loss": 1.0}])
    t, board, _ = tailer(tmp_path)
    t.poll_once()
    shutil.rmtree(gone.path)
    kept.events.write_bytes(line("r-0004", type="step", step=1, loss=2))  # rewritten, shorter
    t.poke()
    t.poll_once()
    assert "r-0003" not in board.runs
    assert board.runs["r-0004"].loss == 2.0 and len(board.runs["r-0004"].train_loss) == 1


def test_thread_notifies_and_stops(tmp_path: Path) -> None:
    run = write_run(tmp_path, "r-0005", [{"t": T0, "type": "started"}])
    t, board, calls = tailer(tmp_path)
    t.start()
    assert t.loaded.wait(5)
    with open(run.events, "ab") as f:
        f.write(line("r-0005", type="step", step=1, loss=0.25))
    for _ in range(100):
        if board.runs["r-0005"].loss == 0.25:
            break
        time.sleep(0.02)
    t.stop()
    assert board.runs["r-0005"].loss == 0.25 and calls
    assert not t._thread.is_alive()


def test_an_unexpected_error_is_reported_and_the_thread_goes_on(tmp_path: Path) -> None:
    write_run(tmp_path, "r-0006", [{"t": T0, "type": "started"}])
    app, errors = App(), []
    t = app.tailer = Tailer(tmp_path, app.post, on_error=errors.append)
    real, calls = t.poll_once, []

    def flaky() -> tuple[bool, bool]:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("boom")
        return real()

    t.poll_once = flaky  # type: ignore[method-assign]
    t.start()
    assert t.loaded.wait(5)
    t.stop()
    assert errors and "boom" in errors[0] and "r-0006" in app.board.runs


def step_lines(run_id: str, first: int, last: int, per_epoch: int = 1000) -> bytes:
    """`step` events first..last (an epoch every `per_epoch` steps), written as the trainer writes them."""
    head = '{"v":1,"t":%.1f,"run":"' + run_id + '","type":"step","step":%d,"epoch":%d,"loss":%.9g,"lr":0.05,'
    tail = '"samples_per_s":2100.0,"mem":{"devices":[],"rss":851443712}}\n'
    return "".join(head % (T0 + s / 10, s, 1 + (s - 1) // per_epoch, 1 / s) + tail
                   for s in range(first, last + 1)).encode()


def finished(run_id: str, steps: int, per_epoch: int = 1000) -> bytes:
    epoch = steps // per_epoch
    return (line(run_id, type="eval", epoch=epoch, step=steps, val_loss=0.3, val_acc=0.875)
            + line(run_id, type="finished", best_val_acc=0.875))


def read_all(t: Tailer, limit: int = 10_000) -> int:
    """Poll until nothing is left to read; returns how many passes it took."""
    for passes in range(1, limit):
        if not t.poll_once()[1] and t.loaded.is_set():
            return passes
    raise AssertionError("the tailer never caught up")


def test_a_log_ending_just_past_a_chunk_boundary_is_read_to_its_end(tmp_path: Path) -> None:
    run = write_run(tmp_path, "r-0007", [{"t": T0, "type": "started"}], info={"pid": 2**22 + 7,
                                                                                 "pid_started": 1.0})
    t, board, _ = tailer(tmp_path)
    t.poll_once()
    assert board.runs["r-0007"].status == "lost"
    body = step_lines("r-0007", 1, 40_000)
    steps = body[: 3 * CHUNK + 1 - run.events.stat().st_size].count(b"\n")  # end a few bytes past 3 chunks
    with open(run.events, "ab") as f:
        f.write(step_lines("r-0007", 1, steps) + finished("r-0007", steps))
    size = run.events.stat().st_size
    assert 3 * CHUNK < size < 4 * CHUNK - 100
    assert read_all(t) > 1  # more than one chunk a pass could not be read at once
    state = board.runs["r-0007"]
    assert (state.status, state.epoch, state.step, len(state.train_loss)) == ("finished", steps // 1000,
                                                                              steps, steps)


def test_a_500000_event_log_reattaches_finished_tail_first(tmp_path: Path) -> None:
    steps, run_id = 500_000, "r-0008"
    run = write_run(tmp_path, run_id, [{"t": T0, "type": "started", "strategy": "single", "world_size": 1}],
                    epochs=500)
    with open(run.events, "ab") as f:
        for first in range(1, steps, 50_000):
            f.write(step_lines(run_id, first, first + 49_999))
        f.write(finished(run_id, steps))
    assert run.events.stat().st_size > 75 << 20
    t, board, messages = tailer(tmp_path)
    t.poll_once()  # one pass reads the log's end: the row is right before the history is in
    state = board.runs[run_id]
    assert (state.status, state.epoch, state.val_acc, state.loss) == ("finished", 500, 0.875, 2e-06)
    assert len(state.train_loss) < steps and not t.loaded.is_set()
    read_all(t)
    state = board.runs[run_id]  # the whole history, handed over in a state of its own
    assert (state.status, state.epoch, state.world_size, len(state.train_loss)) == ("finished", 500, 1, steps)
    assert t.loaded.is_set() and messages[-1].loaded


def test_updates_wait_for_the_app_and_arrive_merged_in_order(tmp_path: Path) -> None:
    run = write_run(tmp_path, "r-0009", [{"t": T0, "type": "started"}])
    posted: list[RunsRead] = []
    t = Tailer(tmp_path, posted.append)  # an app that has not taken anything yet
    t.poll_once()
    for step in (1, 2, 3):
        with open(run.events, "ab") as f:
            f.write(line("r-0009", type="step", step=step, loss=1.0 / step))
        t.poll_once()
    assert len(posted) == 1  # one message in the app's queue at a time
    t.taken()
    t.poll_once()
    assert len(posted) == 2
    board = Board()
    for message in posted:
        for update in message.updates.values():
            board.take(update)
    assert list(board.runs["r-0009"].train_loss.xs) == [1.0, 2.0, 3.0]


def test_parse_without_orjson_gives_the_same_events(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = [b'{"v":1,"type":"step","step":1}', b"garbled", b"[1]", b'{"v":1,"type":"eval","epoch":1}']
    fast = event_log.parse_lines(lines)
    monkeypatch.setattr(event_log, "fast_loads", lambda: json.loads)
    assert event_log.parse_lines(lines) == fast == ([{"v": 1, "type": "step", "step": 1},
                                           {"v": 1, "type": "eval", "epoch": 1}], 2)


def test_a_diverged_loss_s_line_is_an_event_for_every_reader(tmp_path: Path) -> None:
    """json.dumps writes a NaN loss as `NaN`, which orjson refuses: the console's tailer and the CLI's
    readers (one parser) both still read the line."""
    lines = [b'{"v":1,"type":"step","step":1,"loss":NaN}', b'{"v":1,"type":"step","step":2,"loss":1.5}']
    events, bad = event_log.parse_lines(lines)
    assert bad == 0 and [e["step"] for e in events] == [1, 2] and events[0]["loss"] != events[0]["loss"]
    log = tmp_path / "events.jsonl"
    log.write_bytes(b"\n".join(lines) + b"\n")
    assert [e["step"] for e in event_log.tail(log)] == [e["step"] for e in event_log.read_all(log)] == [1, 2]


def test_a_taken_message_wakes_the_thread_only_for_what_was_read_meanwhile(tmp_path: Path) -> None:
    """Issue 47: the app's `taken` let the thread read again at once after every message, so it read at
    twice its pace, each read a few milliseconds' events. It now waits for its poll, unless something read
    while the message was in flight waits to go."""
    run = write_run(tmp_path, "r-0010", [{"t": T0, "type": "started"}])
    messages: list[RunsRead] = []
    t = Tailer(tmp_path, messages.append, poll=0.05, hold=0.0)  # (the test takes the messages itself)
    passes = []
    poll_once = t.poll_once

    def counted() -> tuple[bool, bool]:
        passes.append(time.monotonic())
        return poll_once()

    t.poll_once = counted  # type: ignore[method-assign]
    t.start()
    try:
        deadline = time.monotonic() + 10
        while not messages and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(messages) == 1  # in flight: not taken yet
        with open(run.events, "ab") as f:
            f.write(line("r-0010", type="step", step=1, loss=0.5))
        while len(passes) < 4 and time.monotonic() < deadline:  # read meanwhile: it waits to go
            time.sleep(0.01)
        t.poll = 30.0  # (from now on only `taken` can wake the thread before the test ends)
        time.sleep(0.1)
        assert len(messages) == 1
        t.taken()
        while len(messages) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(messages) == 2 and messages[1].updates["r-0010"].events[0]["step"] == 1
        time.sleep(0.1)
        before = len(passes)
        t.taken()  # nothing waits: the thread sleeps on until its poll
        time.sleep(0.3)
        assert len(passes) == before and len(messages) == 2
    finally:
        t.stop()


def test_read_lines_reads_whole_lines_no_further_than_the_size_last_seen(tmp_path: Path) -> None:
    from trainconsole.console.services.tracked_run import read_lines

    path = tmp_path / "events.jsonl"
    path.write_bytes(b'{"a":1}\n' * 10 + b'{"half')
    assert read_lines(path, 8, 1 << 20) == ([b'{"a":1}'] * 9, 72, False)  # the half line waits
    assert read_lines(path, 8, 1 << 20, size=40) == ([b'{"a":1}'] * 4, 32, False)  # (the rest: next time)
    assert read_lines(path, 0, 20, size=86) == ([b'{"a":1}'] * 2, 16, True)
    long = b'{"x":"' + b"y" * 100 + b'"}\n'
    path.write_bytes(long + b'{"a":1}\n')
    assert read_lines(path, 0, 16, size=len(long) + 8) == ([long[:-1]], len(long), True)  # read whole


def test_what_live_runs_wrote_is_posted_before_a_scans_work(tmp_path: Path) -> None:
    """Issue 47: once a second the scan (every run's run.json and process) came first in a pass and held up
    what the live runs wrote by 5-15 ms, the live lag's p99 at 10,000 events/s."""
    run = write_run(tmp_path, "r-0011", [{"t": T0, "type": "started"}])
    t, board, messages = tailer(tmp_path)
    t.poll_once()
    with open(run.events, "ab") as f:
        f.write(line("r-0011", type="step", step=1, loss=0.5))
    run.write_info({**json.loads(run.info_path.read_text()), "name": "renamed"})
    t._next_scan = 0.0  # (a scan is due)
    before = len(messages)
    t.poll_once()
    live, scanned = messages[before:]
    assert [e["step"] for e in live.updates["r-0011"].events] == [1]
    assert scanned.updates["r-0011"].info["name"] == "renamed" and not scanned.updates["r-0011"].events
    assert board.runs["r-0011"].name == "renamed" and board.runs["r-0011"].loss == 0.5
