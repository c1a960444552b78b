"""The dashboard's keys that act on runs: the marked runs (space), else the one under the cursor.

`s`, `k`, `r` and delete take every marked run at once, with one confirm naming how many (`k` and delete
always ask; `s` and `r` ask when they act on more than one). They are carried out by `RunCommands`, through
the control layer. A mixin of `MainScreen`, which keeps the screen's module to its panes.
"""

from __future__ import annotations

from collections.abc import Callable

from trainconsole.console.screens.confirm_screen import ConfirmScreen
from trainconsole.console.screens.dashboard_parts import Parts
from trainconsole.console.widgets.runs_table import RunsTable
from trainconsole.trainers import protocol


def runs_named(ids: list[str]) -> str:
    """`run ID` for one run, `N runs` for more."""
    return f"run {ids[0]}" if len(ids) == 1 else f"{len(ids)} runs"


class RunMarks(Parts):
    """Which runs a key acts on, and the keys that stop, kill, resume and delete them."""

    def _cursor_run(self) -> str | None:
        # The cursor, not the selection: its RowHighlighted message may still be queued behind this key.
        return self.query_one(RunsTable).selected_id or self.selection.selected

    def _selected_run(self) -> protocol.RunDir | None:
        """The run under the cursor (else a notice and None)."""
        self.selection.selected = self._cursor_run()
        if self.selection.selected is None:
            self.notify("no run selected", severity="warning")
            return None
        return self.commands.control.run(self.selection.selected)

    def chosen_runs(self) -> list[protocol.RunDir]:
        """The marked runs the board still has, else the run under the cursor (else a notice and [])."""
        ids = self.selection.targets(self.board, self._cursor_run())
        if not ids:
            self.notify("no run selected", severity="warning")
        return [self.commands.control.run(run_id) for run_id in ids]

    def _confirmed(self, question: str, act: Callable[[], None]) -> None:
        self.app.push_screen(ConfirmScreen(question), lambda yes: act() if yes else None)

    def action_stop(self) -> None:
        """Ask the marked (else the selected) runs to checkpoint and stop."""
        found = self.chosen_runs()
        if len(found) == 1:
            self.notify(f"stopping {found[0].id}: it checkpoints, then exits")
            self.commands.stop(found)
        elif found and not self.refused("stop"):
            question = f"Stop {len(found)} runs?\nEach checkpoints, then exits."
            self._confirmed(question, lambda: self.commands.stop(found))

    def action_kill(self) -> None:
        """Kill the marked (else the selected) runs and all their processes, after a confirm."""
        found = self.chosen_runs()
        if found and not self.refused("kill"):  # (no confirm for what would be refused)
            what = runs_named([run.id for run in found])
            question = f"Kill {what} and every process {'it' if len(found) == 1 else 'they'} started?\n" \
                       f"{'It' if len(found) == 1 else 'They'} will not checkpoint."
            self._confirmed(question, lambda: self.commands.kill(found))

    def action_resume(self) -> None:
        """Start the marked (else the selected) runs again from their last checkpoints."""
        found = self.chosen_runs()
        if len(found) == 1:
            self.commands.resume(found)
        elif found and not self.refused("resume"):
            self._confirmed(f"Resume {len(found)} runs from their last checkpoints?",
                            lambda: self.commands.resume(found))

    def action_delete(self) -> None:
        """Move the marked (else the selected) runs to the home's trash, after a confirm (y/n)."""
        found = self.chosen_runs()
        if found:
            question = f"Move {runs_named([run.id for run in found])} to the trash?\n" \
                       "`trainconsole restore ID` brings a run back."
            self._confirmed(question, lambda: self.commands.delete(found))
