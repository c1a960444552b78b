"""The dashboard's keys on a search's trials: `x` stops the trial under the leaderboard's cursor, `t`
trains its config (or the best trial's) as a full run. A mixin of `MainScreen`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainconsole.console.core.leaderboard import Search, Trial, searched
from trainconsole.console.widgets.leaderboard import Leaderboard
from trainconsole.trainers import protocol

if TYPE_CHECKING:
    from trainconsole.console.screens.main_screen import MainScreen

    Base = MainScreen
else:
    Base = object


class TrialKeys(Base):
    """Stop one trial, or train one as a run."""

    def _selected_search(self) -> tuple[protocol.RunDir, Search] | None:
        """The selected run and its trials, if it is a tune run (else a notice and None)."""
        run = self._selected_run()
        state = self.board.runs.get(run.id) if run is not None else None
        if run is None or state is None or state.search is None or not state.search.trials:
            self.notify("select a tune run with trials first", severity="warning")
            return None
        return run, state.search

    def chosen_trial(self, search: Search) -> Trial | None:
        """The trial under the leaderboard's cursor, else the search's best: what `t` trains."""
        return search.trials.get(self.query_one(Leaderboard).selected_trial or "") or search.leader()

    def action_stop_trial(self) -> None:
        """Stop the trial under the leaderboard's cursor; the rest of the search goes on."""
        found = self._selected_search()
        trial_id = self.query_one(Leaderboard).selected_trial if found else None
        if found is None or trial_id is None or self.refused("stop a trial"):  # (a UI-thread call)
            return
        self.commands.control.stop_trial(found[0], trial_id)
        self.notify(f"asked trial #{found[1].trials[trial_id].number} to stop; the search goes on")

    def action_train_trial(self) -> None:
        """Train the selected trial's config (or the best trial's) as a full run."""
        found = self._selected_search()
        trial = self.chosen_trial(found[1]) if found else None
        if found is None or trial is None:
            return
        self.notify(f"training trial #{trial.number}: {searched(trial.config)}")  # what `t` took, said first
        self.commands.train_trial(found[0], trial.number, dict(trial.config))
