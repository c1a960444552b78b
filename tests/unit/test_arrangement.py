"""The runs table's arrangement of the rows: the filter's runs only, any column's order, tags after names."""

from __future__ import annotations

from trainconsole.console.core.arrangement import TAGS_SEP, Arrangement
from trainconsole.console.core.board import row
from trainconsole.console.core.leaderboard import Search
from trainconsole.console.core.run_state import RunState
from trainconsole.console.widgets.runs_table import tagged


def runs() -> dict[str, RunState]:
    out = {}
    for i, (loss, acc) in enumerate(((0.5, 0.9), (0.2, None), (0.9, 0.7))):
        run = RunState(f"2024-run-{i}")
        run.name, run.loss, run.val_acc, run.started_at = f"n{i}", loss, acc, 100.0 + i
        out[run.id] = run
    return out


def rows(states: dict[str, RunState]) -> list[tuple[str, tuple[str, ...]]]:
    return [(r.id, row(r, 200.0)) for r in states.values()]


def test_filter_sort_and_reverse() -> None:
    states, view = runs(), Arrangement()
    assert [i for i, _ in view.arrange(rows(states), states, 200.0)] == list(states)
    view.sort_by("loss")
    assert [i[-1] for i, _ in view.arrange(rows(states), states, 200.0)] == ["1", "0", "2"]  # smallest first
    view.sort_by("loss")
    assert [i[-1] for i, _ in view.arrange(rows(states), states, 200.0)] == ["2", "0", "1"]
    view.sort_by("acc")  # largest first, a run without one last whichever way
    assert [i[-1] for i, _ in view.arrange(rows(states), states, 200.0)] == ["0", "2", "1"]
    view.reverse = True
    assert [i[-1] for i, _ in view.arrange(rows(states), states, 200.0)] == ["2", "0", "1"]
    view.shown = {"2024-run-0", "2024-run-1"}
    assert [i[-1] for i, _ in view.arrange(rows(states), states, 200.0)] == ["0", "1"]


def test_next_sort_cycles_every_column_then_the_ranking() -> None:
    view, seen = Arrangement(), []
    while (key := view.next_sort()) is not None:
        seen.append(key)
    assert seen == ["run", "status", "strategy", "epoch", "loss", "acc", "rate", "elapsed", "host"]


def test_tags_follow_the_name_and_keep_it_readable_when_narrow() -> None:
    states, view = runs(), Arrangement(tags={"2024-run-0": ["baseline", "lr-sweep"]})
    cells = dict(view.arrange(rows(states), states, 200.0))
    assert cells["2024-run-0"][0] == f"n0·0{TAGS_SEP}#baseline #lr-sweep"
    assert TAGS_SEP not in cells["2024-run-1"][0]
    assert tagged(cells["2024-run-0"][0], 40).plain == "n0·0 #baseline #lr-sweep"
    narrow = tagged("small-cnn-digits·a1b2" + TAGS_SEP + "#baseline", 15).plain
    assert len(narrow) <= 15 and narrow.startswith("smal") and "a1b2" in narrow and "#ba" in narrow


def test_a_search_sorts_by_the_best_metric_and_trial_count_its_row_shows() -> None:
    """A search's acc cell is its best trial's metric and its epoch cell its trial count: sorted by acc or
    epoch, it goes where those put it, not last (it has no val_acc or epoch of its own)."""
    states = runs()
    live, ended = RunState("2024-run-3"), RunState("2024-run-4")
    live.kind, live.search, live.started_at = "tune", Search(), 103.0
    for trial, acc in (("a", 0.6), ("b", 0.8)):
        live.search.apply({"type": "trial", "trial_id": trial, "iteration": 1, "metrics": {"val_acc": acc}})
    ended.kind, ended.trials_summary, ended.started_at = "tune", (5, 0.75), 104.0
    states.update({live.id: live, ended.id: ended})
    states["2024-run-0"].epoch, states["2024-run-2"].epoch = 3, 1
    shown = dict(rows(states))
    assert (shown[live.id][3], shown[live.id][5], shown[ended.id][3], shown[ended.id][5]) == (
        "2 tr", "0.8", "5 tr", "0.75")
    view = Arrangement()
    view.sort_by("acc")  # largest first: 0.9, the search's 0.8, the ended search's 0.75, 0.7, none
    assert [i[-1] for i, _ in view.arrange(rows(states), states, 200.0)] == ["0", "3", "4", "2", "1"]
    view.sort_by("epoch")  # largest first: 5 trials, 3 epochs, 2 trials, 1 epoch, none
    assert [i[-1] for i, _ in view.arrange(rows(states), states, 200.0)] == ["4", "0", "3", "2", "1"]
