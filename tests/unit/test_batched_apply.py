"""A live read's batch of events applied at once (`RunState.apply_all`, `Series.extend`, what `Board.apply`
does) leaves a run exactly as applying them one at a time does: every view, and each history's own points and
min/max summaries; notices are the same."""

from __future__ import annotations

import math
import random

from history_paths import views
from hypothesis import given, settings
from hypothesis import strategies as st

from trainconsole.console.core.board import Board
from trainconsole.console.core.history import Series
from trainconsole.console.core.notices import Before, notices
from trainconsole.console.core.run_state import RunState
from trainconsole.console.core.run_update import RunUpdate

T0 = 1_700_000_000.0

num = st.one_of(st.floats(0.0, 10.0, allow_nan=False), st.integers(0, 9),
                st.sampled_from([math.nan, math.inf]))
at = st.one_of(st.integers(0, 400), st.just(math.nan))
step = st.fixed_dictionaries({"type": st.just("step"), "step": at}, optional={
    "epoch": st.integers(0, 9), "loss": num, "Loss_D": num, "acc": num, "grad_norm": num, "lr": num,
    "samples_per_s": num, "count": st.integers(1, 20), "source": st.sampled_from(["probe", "text"]),
    "mem": st.fixed_dictionaries({"rss": st.integers(0, 10**9)})})
other = st.one_of(
    st.fixed_dictionaries({"type": st.just("started"), "strategy": st.sampled_from(["single", "ddp"])},
                          optional={"params": st.integers(1, 10**6), "resumed_from_step": st.integers(1, 9)}),
    st.fixed_dictionaries({"type": st.just("eval")}, optional={
        "epoch": st.integers(0, 9), "step": st.integers(0, 400), "val_loss": num, "val_acc": num}),
    st.fixed_dictionaries({"type": st.just("warning"), "message": st.just("m"),
                           "code": st.sampled_from(["disk_full", "diverging", "nan_loss"])}),
    st.fixed_dictionaries({"type": st.just("oom_recovered"), "step": st.integers(0, 400)}),
    st.fixed_dictionaries({"type": st.sampled_from(["finished", "failed", "stopped", "killed"])},
                          optional={"best_val_acc": num, "cause": st.just("x")}))


def insides(run: RunState) -> list[object]:
    """Each history's points and summaries, by name (a view reads only part of them)."""
    named = {"loss": run.train_loss, "times": run.step_times, "val_loss": run.val_losses,
             "val_acc": run.val_accs, **{f"m:{k}": s for k, s in run.metrics.items()}}
    return [(name, list(s.xs), list(s.ys), [list(a) for a in s._lo], [list(a) for a in s._hi])
            for name, s in named.items()]


def one_at_a_time(events: list[dict]) -> RunState:
    run = RunState("r")
    for event in events:
        run.apply(event)
    return run


def in_batches(events: list[dict], sizes: list[int]) -> RunState:
    board, i = Board(), 0
    while i < len(events):
        n = sizes[i % len(sizes)]
        assert board.apply("r", events[i:i + n]) == len(events[i:i + n])
        i += n
    return board.get("r")


@settings(max_examples=150, deadline=None)
@given(log=st.lists(st.one_of(step, step, step, step, other), max_size=200),
       sizes=st.lists(st.integers(1, 60), min_size=1, max_size=5), ascending=st.booleans())
def test_a_batch_leaves_a_run_as_its_events_one_at_a_time(log: list, sizes: list[int],
                                                          ascending: bool) -> None:
    if ascending:  # (a live run: steps one after another; else replays and repeats, the slow way's own)
        for i, e in enumerate(log):
            if e["type"] == "step":
                e["step"] = i
    events = [{"v": 1, "t": T0 + i, "run": "r", **e} for i, e in enumerate(log)]
    single, batched = one_at_a_time(events), in_batches(events, sizes)
    assert insides(batched) == insides(single)
    assert views(batched, (3, 40)) == views(single, (3, 40))


def test_a_live_read_of_long_batches_keeps_the_same_summaries() -> None:
    """500 steps a read (the benchmark's rate), spikes and ties, past the coarsest summary's blocks."""
    rng = random.Random(7)
    events = [{"v": 1, "t": T0 + s / 500, "run": "r", "type": "step", "step": s, "epoch": 1, "lr": 0.05,
               "loss": rng.choice((1.0, 1.0, 2.5, rng.random(), 50.0 if rng.random() < 0.01 else 0.5)),
               "acc": round(rng.random(), 1), "samples_per_s": 2100.0, "mem": {"rss": 812 << 20}}
              for s in range(1, 70_001)]
    single, batched = one_at_a_time(events), in_batches(events, [500, 37, 4096, 1])
    assert insides(batched) == insides(single)
    assert views(batched, (20, 57, 2000)) == views(single, (20, 57, 2000))


def test_extend_is_append_in_turn_for_any_points() -> None:
    rng = random.Random(3)
    for _ in range(300):
        a, b = Series(), Series()
        for _ in range(rng.randint(1, 6)):
            x0 = rng.choice((0.0, 5.0, 100.0, 4000.0))
            pts = [(x0 + i * rng.choice((1.0, 1.0, 0.5, -3.0)),
                    rng.choice((1.0, 2.0, rng.random(), math.nan))) for i in range(rng.randint(0, 300))]
            for x, y in pts:
                a.append(x, y)
            b.extend([x for x, _ in pts], [y for _, y in pts])
            assert (list(b.xs), list(b.ys), b._lo, b._hi) == (list(a.xs), list(a.ys), a._lo, a._hi)


def test_a_batch_of_steps_with_a_trouble_and_an_end_gives_their_notices_only() -> None:
    board = Board()
    board.take(RunUpdate("r", events=[{"v": 1, "t": T0, "run": "r", "type": "started", "strategy": "single"}],
                         alive=True))
    steps = [{"v": 1, "t": T0 + s, "run": "r", "type": "step", "step": s, "loss": 1.0} for s in range(1, 500)]
    update = RunUpdate("r", events=[*steps[:250], {"v": 1, "t": T0 + 251, "run": "r", "type": "warning",
                                                   "code": "diverging", "message": "loss x10"},
                                    *steps[250:], {"v": 1, "t": T0 + 600, "run": "r", "type": "finished",
                                                   "best_val_acc": 0.5}], alive=True)
    before = Before.of(board.runs["r"])
    board.take(update)
    found = notices(update, before, board.runs["r"])
    assert [(n.text, n.severity) for n in found] == [
        ("r: a diverging loss: loss x10", "warning"), ("r: finished, best val acc 0.5000", "information")]
    assert len(board.runs["r"].train_loss) == 499 and board.runs["r"].status == "finished"
