"""The console's pure core: histories and their decimation, run state from events, rows, ranking."""

from __future__ import annotations

import math
import random

import pytest

from trainconsole.console.core.board import (
    Board,
    build_view,
    duration,
    human_bytes,
    label,
    plot_lines,
    plot_view,
    rank,
    row,
)
from trainconsole.console.core.columns import COLUMNS
from trainconsole.console.core.history import Series
from trainconsole.console.core.run_state import RunState

T0 = 1_700_000_000.0


def ev(kind: str, t: float = T0, **fields: object) -> dict:
    return {"v": 1, "t": t, "run": "r", "type": kind, **fields}


class TestSeries:
    def test_short_history_is_drawn_as_is(self) -> None:
        s = Series()
        for i in range(10):
            s.append(i, float(i))
        assert s.decimate(50) == ([float(i) for i in range(10)], [float(i) for i in range(10)])

    def test_decimation_bounds_points_and_keeps_spikes(self) -> None:
        rng, spikes = random.Random(0), Series()
        for i in range(200_000):
            spikes.append(i, 50.0 if i == 123_457 else (-5.0 if i == 77 else 1.0 + rng.random() * 0.1))
        xs, ys = spikes.decimate(100)
        assert len(xs) <= 200
        assert max(ys) == 50.0 and xs[ys.index(50.0)] == 123_457
        assert min(ys) == -5.0 and xs[ys.index(-5.0)] == 77
        assert xs == sorted(xs)

    @pytest.mark.parametrize("n", [1_000, 5_000, 70_001])
    def test_each_bucket_holds_its_true_extremes(self, n: int) -> None:
        s, rng = Series(), random.Random(n)
        values = [rng.gauss(0, 1) for _ in range(n)]
        for i, v in enumerate(values):
            s.append(i, v)
        xs, ys = s.decimate(40)
        assert max(ys) == max(values) and min(ys) == min(values)
        assert all(values[int(x)] == y for x, y in zip(xs, ys, strict=True))

    def test_non_finite_values_are_refused(self) -> None:
        s = Series()
        assert not s.append(1, math.nan) and not s.append(2, math.inf)
        assert s.append(3, 1.0) and len(s) == 1

    def test_a_step_going_back_replaces_the_later_points(self) -> None:
        s = Series()
        for i in range(1, 5001):
            s.append(i, float(i))
        s.append(3000, -1.0)  # resumed from the checkpoint at step 2999
        assert len(s) == 3000 and s.last == (3000.0, -1.0)
        xs, ys = s.decimate(10)
        assert max(xs) == 3000 and min(ys) == -1.0 and max(ys) == 2999.0


class TestRunState:
    def test_a_run_from_start_to_finish(self) -> None:
        run = RunState("r")
        run.apply(ev("started", strategy="ddp", world_size=2, devices=["cpu", "cpu"], params=100,
                     trainable_params=40))
        run.apply(ev("step", T0 + 1, step=10, epoch=1, loss=2.0, lr=0.1, samples_per_s=500.0,
                     mem={"devices": [], "rss": 1 << 20}))
        run.apply(ev("eval", T0 + 2, epoch=1, step=10, val_loss=1.5, val_acc=0.6))
        run.apply(ev("eval", T0 + 3, epoch=2, step=20, val_loss=1.2, val_acc=0.5))
        assert run.status == "running" and run.loss == 2.0 and run.best_val_acc == 0.6
        assert "60 frozen" in run.notes[0].text
        run.apply(ev("finished", T0 + 4, best_val_acc=0.6))
        assert run.status == "finished" and run.elapsed(T0 + 100) == 4.0
        assert len(run.train_loss) == 1 and len(run.val_accs) == 2

    def test_failure_keeps_cause_and_hint(self) -> None:
        run = RunState("r")
        run.apply(ev("started"))
        run.apply(ev("failed", T0 + 1, cause="CUDA out of memory", hint="lower batch_size", traceback="tb"))
        assert run.status == "failed" and run.failure and run.failure["cause"] == "CUDA out of memory"
        assert run.notes[-1].level == "error" and run.notes[-1].hint == "lower batch_size"

    def test_liveness_decides_between_running_and_lost(self) -> None:
        run = RunState("r")
        run.apply(ev("started"))
        run.alive = False
        assert run.status == "lost"
        run.alive = True
        assert run.status == "running"

    def test_a_resumed_run_is_running_before_its_started_event(self) -> None:
        run = RunState("r")
        run.apply(ev("stopped", T0 + 5))
        run.set_info({"started_at": T0 + 9, "pid": 1})
        run.alive = True
        assert run.status == "running"
        run.alive = False  # the resumed process vanished without a final event of its own
        assert run.status == "lost"

    def test_unknown_and_malformed_events_are_ignored(self) -> None:
        run = RunState("r")
        run.apply(ev("from_the_future", x=1))
        run.apply(ev("step", step="x", loss=None))
        run.apply({"type": "eval", "val_acc": True})
        assert run.events == 3 and len(run.train_loss) == 0 and run.val_acc is None


class TestRowsAndRanking:
    def make(self, rid: str, started: float, acc: float | None) -> RunState:
        run = RunState(rid, name="cnn", started_at=started)
        run.best_val_acc = acc
        return run

    def test_rank_newest_and_best(self) -> None:
        runs = [self.make("a-0001", 1, 0.5), self.make("b-0002", 3, None), self.make("c-0003", 2, 0.9)]
        assert [r.id for r in rank(runs)] == ["b-0002", "c-0003", "a-0001"]
        assert [r.id for r in rank(runs, "best")] == ["c-0003", "a-0001", "b-0002"]

    def test_row_cells(self) -> None:
        run = RunState("20240101-000000-cnn-a1b2", name="cnn", strategy="model_parallel", epochs=5)
        run.apply(ev("step", step=3, epoch=2, loss=0.123456, samples_per_s=2100.4))
        run.set_info({"started_at": T0 - 65})
        assert row(run, T0, marked=True) == ("● cnn·a1b2", "running", "mp", "2/5", "0.1235", "-", "2,100",
                                             "1m05s")
        run.problem = "cannot read"
        assert row(run, T0)[0] == "! cnn·a1b2"

    def test_formatting(self) -> None:
        assert [duration(s) for s in (5, 65, 3725)] == ["5s", "1m05s", "1h02m"]
        assert human_bytes(3 << 30) == "3G" and human_bytes(1536 << 20) == "1.5G" and human_bytes(12) == "12B"
        assert label(RunState("plain")) == "plain"


class TestView:
    def board(self) -> Board:
        board = Board()
        for rid, t in (("a-0001", 1.0), ("b-0002", 2.0)):
            run = board.get(rid)
            run.set_info({"name": "cnn", "started_at": t})
            board.apply(rid, [ev("step", step=i, loss=1.0 / i) for i in range(1, 50)])
        board.take_dirty()
        return board

    def test_log_only_when_the_selected_run_changed(self) -> None:
        board = self.board()
        view = build_view(board, T0, None, [], "newest", set())
        assert view.selected == "b-0002" and view.log is None and not view.plot_changed
        assert [r for r, _ in view.rows] == ["b-0002", "a-0001"]
        view = build_view(board, T0, "a-0001", ["b-0002"], "newest", {"b-0002"})
        assert view.plot_changed and view.log is None  # an overlaid run changed, not the selected one
        view = build_view(board, T0, "a-0001", [], "newest", {"a-0001"})
        assert view.plot_changed and view.log is not None and view.log.title == "log: cnn·0001 (running)"

    def test_rows_carry_the_host_only_when_the_runs_have_several(self) -> None:
        board = self.board()
        board.get("a-0001").set_info({"host": "box-a"})
        board.get("b-0002").set_info({"host": "box-a"})
        view = build_view(board, T0, None, [], "newest", set())
        assert view.hosts == ["box-a"] and all(len(cells) == len(COLUMNS) for _, cells in view.rows)
        board.get("b-0002").set_info({"host": "box-b"})
        view = build_view(board, T0, None, [], "newest", set())
        assert view.hosts == ["box-a", "box-b"]
        assert [(rid, cells[len(COLUMNS):]) for rid, cells in view.rows] == [("b-0002", ("box-b",)),
                                                                             ("a-0001", ("box-a",))]

    def test_plot_view_puts_the_selected_run_first(self) -> None:
        lines, title = plot_view(self.board(), "a-0001", ["b-0002", "gone"], 20)
        assert [line.run_id for line in lines] == ["a-0001", "b-0002"] and title == "loss: cnn·0001 +1 more"

    def test_plot_lines_are_decimated(self) -> None:
        run = RunState("r")
        for i in range(1, 10_000):
            run.apply(ev("step", step=i, loss=1.0))
        (line,) = plot_lines([run], 30)
        assert line.kind == "train" and len(line.xs) <= 60


def test_a_script_runs_log_says_once_where_its_figures_come_from() -> None:
    """Issue 35: the log pane says which numbers are measured (exact) and which are read from text."""
    run = RunState("r")
    run.apply(ev("started"))
    for step in (1, 2, 3):
        run.apply(ev("step", T0 + step, step=step, loss=1.0 / step, source="probe"))
    run.apply(ev("eval", T0 + 4, step=3, val_acc=0.9, source="text"))
    run.apply(ev("warning", T0 + 5, code="nonfinite_loss", message="the loss became nan at step 4",
                 source="probe"))
    run.apply(ev("step", T0 + 6, step=5, loss=0.5))  # our own trainer's events name no source
    texts = [note.text for note in run.notes]
    assert sum("measured in the script's process (exact)" in t for t in texts) == 1
    assert sum("read from the script's printed lines" in t for t in texts) == 1
    assert texts[-1].endswith("nan at step 4 (measured in the script's process)")
    assert len(texts) == 4  # started, the two sources, the warning: nothing for a step without a source
