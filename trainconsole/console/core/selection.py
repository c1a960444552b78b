"""What the dashboard shows: the selected run, the runs marked for the overlay and compare, the sort
order, and the weights view's layer. Pure: the dashboard owns one, its keys change it, frames read it."""

from __future__ import annotations

from dataclasses import dataclass, field

from trainconsole.console.core.board import RANKINGS, Board


@dataclass
class Selection:
    """What the dashboard shows and which runs its keys take (no Textual, no I/O)."""

    selected: str | None = None
    marked: list[str] = field(default_factory=list)
    ranking: str = RANKINGS[0]
    weights_on: bool = False  # h: the weights view in the plot's place
    layer: str | None = None  # the layer the weights view shows

    def toggle_mark(self, run_id: str) -> None:
        """Overlay the run on the plot, or take it off."""
        if run_id in self.marked:
            self.marked.remove(run_id)
        else:
            self.marked.append(run_id)

    def compared(self, board: Board) -> list[str]:
        """The marked runs the board still has, in marking order (which gives each its colour)."""
        return [run_id for run_id in self.marked if run_id in board.runs]

    def targets(self, board: Board, cursor: str | None) -> list[str]:
        """What a key that acts on runs takes: the marked runs the board still has, else the run under
        the cursor (`cursor`; else the selected one), which becomes the selected one; [] when none."""
        marked = self.compared(board)
        if marked:
            return marked
        self.selected = cursor or self.selected
        return [self.selected] if self.selected is not None else []

    def fits(self, action: str, board: Board) -> bool:
        """Whether a key that depends on the selection acts on it: x and t on a search; h and space (as
        shown) on other runs; [ ] in the weights view; m on a run that logs more than its loss; c once two
        runs are marked. Any other key fits."""
        tune = self.is_tune(board)
        if action in ("stop_trial", "train_trial", "mark_search"):  # (a search is marked too, for s k r)
            return tune
        if action == "weights":  # a search's plot is its trials' curves
            return not tune
        if action == "mark":  # overlaid runs are drawn on the loss plot, not in the weights view
            return not (tune or self.weights_on)
        if action == "layer":
            return self.weights_on and not tune
        if action == "metric":  # a run that logs more than its loss (a script's own metrics)
            run = board.runs.get(self.selected or "")
            return bool(run and run.metrics) and not (tune or self.weights_on)
        if action == "compare":
            return len(self.compared(board)) >= 2
        return True

    def next_ranking(self) -> str:
        """Sort by the next ranking (newest first, best validation accuracy); returns it."""
        self.ranking = RANKINGS[(RANKINGS.index(self.ranking) + 1) % len(RANKINGS)]
        return self.ranking

    def is_tune(self, board: Board) -> bool:
        """Whether the selected run is a search (whose plot is its trials' curves)."""
        run = board.runs.get(self.selected or "")
        return run is not None and run.kind == "tune"

    def showing_weights(self, board: Board) -> bool:
        """Whether the plot's place shows the weights view (never for a search: its trials show there)."""
        return self.weights_on and not self.is_tune(board)
