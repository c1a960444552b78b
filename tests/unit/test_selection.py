"""What a key that acts on runs takes: the marked runs, else the run under the cursor (`Selection`)."""

from __future__ import annotations

from trainconsole.console.core.board import Board
from trainconsole.console.core.history import Series
from trainconsole.console.core.selection import Selection


def board_of(*ids: str) -> Board:
    board = Board()
    for run_id in ids:
        board.get(run_id)
    return board


def test_the_marked_runs_the_board_still_has_in_marking_order_else_the_cursors() -> None:
    board, chosen = board_of("a", "b", "c"), Selection(selected="a")
    assert chosen.targets(board, "c") == ["c"] and chosen.selected == "c"  # the cursor's becomes selected
    chosen.toggle_mark("b")
    chosen.toggle_mark("gone")  # deleted since it was marked
    chosen.toggle_mark("a")
    assert chosen.targets(board, "c") == ["b", "a"] and chosen.selected == "c"


def test_no_cursor_falls_back_to_the_selected_run_and_nothing_gives_nothing() -> None:
    board = board_of("a")
    assert Selection(selected="a").targets(board, None) == ["a"]
    assert Selection().targets(board, None) == []


def test_which_keys_fit_a_search_a_run_the_weights_view_and_marked_runs() -> None:
    board = board_of("train", "search", "script")
    board.runs["search"].kind = "tune"
    board.runs["script"].metrics["f1"] = Series()
    on_search, on_run = Selection(selected="search"), Selection(selected="train")
    trial_keys = ("stop_trial", "train_trial", "mark_search")
    assert all(on_search.fits(a, board) for a in trial_keys)
    assert not any(on_run.fits(a, board) for a in trial_keys)
    assert not on_search.fits("weights", board) and not on_search.fits("mark", board)  # its plot: trials
    assert on_run.fits("weights", board) and on_run.fits("mark", board) and not on_run.fits("layer", board)
    on_run.weights_on = True  # the weights view: [ ] move between layers, nothing is overlaid there
    assert on_run.fits("layer", board) and not on_run.fits("mark", board)
    on_search.weights_on = True  # (a search has no weights view: its trials stay in the plot's place)
    assert not on_search.fits("layer", board)
    assert not on_run.fits("metric", board) and Selection(selected="script").fits("metric", board)
    assert not on_run.fits("compare", board)
    on_run.toggle_mark("train")
    on_run.toggle_mark("gone")  # deleted since: two marks, one run
    assert not on_run.fits("compare", board)
    on_run.toggle_mark("script")
    assert on_run.fits("compare", board) and on_run.fits("launch", board)
