"""Weight histograms in the console: events into per-layer histories, re-binning, sparklines, the view."""

from __future__ import annotations

import pytest

from trainconsole.console.core.board import Board, plot_lines, weights_view
from trainconsole.console.core.run_state import RunState
from trainconsole.console.core.weights import KEEP, Snapshot, Weights, rebin, rows, sparkline


def hist(epoch: int, **layers: tuple[float, float, list[int]]) -> dict:
    return {"type": "histogram", "epoch": epoch, "step": epoch * 10,
            "layers": {name.replace("_", "."): {"min": lo, "max": hi, "counts": c}
                       for name, (lo, hi, c) in layers.items()}}


def test_rebin_keeps_every_count_and_places_it_on_the_shared_axis() -> None:
    snap = Snapshot(1, 0.0, 1.0, (4, 0, 0, 8))  # bins [0, .25) [.25, .5) [.5, .75) [.75, 1]
    same = rebin(snap, 0.0, 1.0, 4)
    assert same == pytest.approx([4, 0, 0, 8])
    wider = rebin(snap, -1.0, 1.0, 4)  # the snapshot covers only the right half of this axis
    assert wider == pytest.approx([0, 0, 4, 8]) and sum(wider) == pytest.approx(12)
    finer = rebin(snap, 0.0, 1.0, 8)
    assert finer == pytest.approx([2, 2, 0, 0, 0, 0, 4, 4])
    point = Snapshot(1, 0.5, 0.5, (7, 0, 0))  # every value equal (a bias at zero): one column
    assert rebin(point, 0.0, 1.0, 4) == pytest.approx([0, 0, 7, 0])


def test_sparkline_scales_to_the_peak_and_never_hides_a_small_count() -> None:
    assert sparkline([0, 1, 50, 100]) == " ▁▄█"
    assert sparkline([0, 0]) == "  "


def test_events_build_layer_histories_and_a_replayed_epoch_replaces_the_old_one() -> None:
    weights = Weights()
    for epoch in (1, 2, 3):
        weights.apply(hist(epoch, conv_weight=(-epoch, epoch, [1, 2, 1]), fc_bias=(0.0, 1.0, [3, 0, 0])))
    weights.apply(hist(2, conv_weight=(-9, 9, [0, 5, 0])))  # a resumed run replays epoch 2
    weights.apply(hist(4, fc_bias=(None, None, [])))  # NaN weights: no bins, nothing drawn
    assert weights.names == ["conv.weight", "fc.bias"]
    assert [s.epoch for s in weights.layers["conv.weight"]] == [1, 2]
    assert weights.layers["conv.weight"][-1] == Snapshot(2, -9.0, 9.0, (0, 5, 0))
    assert [s.epoch for s in weights.layers["fc.bias"]] == [1, 2, 3]
    for epoch in range(5, KEEP + 100):  # a long run keeps its newest epochs only
        weights.apply(hist(epoch, fc_bias=(0.0, 1.0, [1])))
    assert len(weights.layers["fc.bias"]) == KEEP and weights.layers["fc.bias"][-1].epoch == KEEP + 99


def test_rows_show_the_newest_epochs_that_fit_on_one_axis() -> None:
    history = [Snapshot(e, -e, e, (0, 10, 0)) for e in range(1, 6)]
    drawn = rows(history, width=10, height=3)
    assert [epoch for epoch, _ in drawn.rows] == [3, 4, 5]
    assert (drawn.low, drawn.high) == (-5, 5)
    assert all(len(line) == 10 for _, line in drawn.rows)
    narrowest, widest = drawn.rows[0][1], drawn.rows[-1][1]
    assert narrowest.count(" ") > widest.count(" ")  # epoch 3 spans less of the axis than epoch 5
    assert rows([], 10, 3) is None


def test_weights_view_picks_and_cycles_the_layer() -> None:
    board = Board()
    board.apply("r", [{"type": "started"}, hist(1, a_weight=(0, 1, [1]), b_weight=(0, 1, [1]))])
    history, title, layer = weights_view(board, "r", None)
    assert layer == "a.weight" and title.endswith("a.weight (1/2)") and len(history) == 1
    assert weights_view(board, "r", layer, 1)[2] == "b.weight"
    assert weights_view(board, "r", "b.weight", 1)[2] == "a.weight"  # wraps
    assert weights_view(board, "r", "a.weight", -1)[2] == "b.weight"
    assert weights_view(board, "nope", None)[0] == []


def test_recovered_out_of_memory_is_a_mark_on_the_plot_at_its_step() -> None:
    run = RunState("r")
    for step in (10, 20, 30):
        run.apply({"type": "step", "step": step, "loss": 1.0})
    run.apply({"type": "oom_recovered", "step": 21, "micro_batch": 32, "accumulate": 2, "batch_size": 64})
    (mark,) = [line for line in plot_lines([run], 50) if line.kind == "oom"]
    assert mark.xs == [21] and mark.run_id == "r"
