"""What a key that acts on runs takes: the marked runs, else the run under the cursor (`Selection`)."""

from __future__ import annotations

from trainconsole.console.core.board import Board
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
