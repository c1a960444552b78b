"""The run lifecycle keys: launch, stop, kill (after a confirm) and resume, each a thread worker.

A mixin of the app: every call into `console.services.runs` may block (process start, a stop's grace
period, waiting for killed processes), so each runs in a thread and reports back with a notification.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from textual import work

from console.core.leaderboard import Search, Trial, searched
from console.core.state import Board
from console.services.tailer import Tailer
from console.widgets.runs_table import RunsTable
from trainers import protocol

if TYPE_CHECKING:  # the dashboard (plotext, the form...) is imported after the first frame
    from console.screens.main_screen import MainScreen
    from console.widgets.run_form import RunForm


class RunActions:
    """Launch, stop, kill and resume for the app (which provides the attributes below)."""

    home: Path
    tailer: Tailer
    board: Board
    main: MainScreen
    selected: str | None
    _select_next: str | None

    def action_launch(self) -> None:
        """Launch the form's config as a new run."""
        from console.widgets.run_form import RunForm  # the dashboard's widgets: not for the first frame

        form = self.main.query_one(RunForm)
        config = form.check()
        if config is None:
            self.notify("the config has a problem: see the setup pane", severity="error")
            self.main.show_pane("setup")
            bad = form.first_error()
            if bad is not None:
                bad.focus()
            return
        self.launch_run(config)

    def on_run_form_submitted(self, event: RunForm.Submitted) -> None:
        """Enter in the form launches."""
        self.launch_run(event.config)

    @work(thread=True, group="runs", exit_on_error=False)
    def launch_run(self, config: protocol.Config) -> None:
        """Start a run detached (it outlives the console) and select it; a script run from the script form."""
        kind = "tune" if "tune" in config else "script" if config["script"]["path"] else "train"
        name = f"tune-{config['model']['name']}-{config['data']['name']}" if kind == "tune" else ""
        from console.services import script_runs

        run = script_runs.start(config, name=name, kind=kind, root=self.home)
        self.call_from_thread(self._launched, run.id)

    def _launched(self, run_id: str) -> None:
        self.notify(f"launched {run_id}")
        self._select_next = run_id
        self.main.show_pane("runs")
        self.tailer.poke()

    def _cursor_run(self) -> str | None:
        # The cursor, not self.selected: its RowHighlighted message may still be queued behind this key.
        return self.main.query_one(RunsTable).selected_id or self.selected

    def _selected_run(self) -> protocol.RunDir | None:
        self.selected = self._cursor_run()
        if self.selected is None:
            self.notify("no run selected", severity="warning")
            return None
        return protocol.RunDir(self.home / "runs" / self.selected)

    def action_stop(self) -> None:
        """Ask the selected run to checkpoint and stop."""
        run = self._selected_run()
        if run is not None:
            self.notify(f"stopping {run.id}: it checkpoints, then exits")
            self.stop_run(run)

    @work(thread=True, group="runs", exit_on_error=False)
    def stop_run(self, run: protocol.RunDir) -> None:
        """SIGTERM, then SIGKILL after the grace period (runs.stop)."""
        from console.services import runs

        state = runs.stop(run)
        self.call_from_thread(self._done, f"{run.id}: {state}")

    def action_kill(self) -> None:
        """Kill the selected run and all its processes, after a confirm."""
        run = self._selected_run()
        if run is not None:
            question = f"Kill run {run.id} and every process it started?\nIt will not checkpoint."
            from console.screens.confirm_screen import ConfirmScreen

            self.push_screen(ConfirmScreen(question), lambda yes: self.kill_run(run) if yes else None)

    @work(thread=True, group="runs", exit_on_error=False)
    def kill_run(self, run: protocol.RunDir) -> None:
        """SIGKILL the run's process group and descendants (runs.kill)."""
        from console.services import runs

        survivors = runs.kill(run)
        message = f"could not kill pids {survivors}" if survivors else f"{run.id}: killed"
        self.call_from_thread(self._done, message, "error" if survivors else "information")

    def action_resume(self) -> None:
        """Start the selected run again from its last checkpoint."""
        run = self._selected_run()
        if run is not None:
            self.resume_run(run)

    @work(thread=True, group="runs", exit_on_error=False)
    def resume_run(self, run: protocol.RunDir) -> None:
        """runs.resume: refuses a running run or one without a checkpoint."""
        from console.services import runs

        try:
            runs.resume(run)
        except (protocol.RunBusy, FileNotFoundError) as e:  # a second `r`, or nothing to resume from
            self.call_from_thread(self._done, str(e), "warning")
            return
        self.call_from_thread(self._done, f"{run.id}: resumed from its last checkpoint")

    def _selected_search(self) -> tuple[protocol.RunDir, Search] | None:
        """The selected run and its trials, if it is a tune run (else a notice and None)."""
        run = self._selected_run()
        state = self.board.runs.get(run.id) if run is not None else None
        if run is None or state is None or state.search is None or not state.search.trials:
            self.notify("select a tune run with trials first", severity="warning")
            return None
        return run, state.search

    def _leaderboard_trial(self) -> str | None:
        from console.widgets.leaderboard import Leaderboard

        return self.main.query_one(Leaderboard).selected_trial

    def _chosen_trial(self, search: Search) -> Trial | None:
        trial_id = self._leaderboard_trial()
        return search.trials.get(trial_id or "") or search.leader()

    def action_stop_trial(self) -> None:
        """Stop the trial under the leaderboard's cursor; the rest of the search goes on."""
        found = self._selected_search()
        trial_id = self._leaderboard_trial() if found else None
        if found is None or trial_id is None:
            return
        protocol.request_trial_stop(found[0], trial_id)
        number = found[1].trials[trial_id].number
        self.notify(f"asked trial #{number} to stop; the search goes on")

    def action_train_trial(self) -> None:
        """Train the selected trial's config (or the best trial's) as a full run."""
        found = self._selected_search()
        trial = self._chosen_trial(found[1]) if found else None
        if found is None or trial is None:
            return
        self.notify(f"training trial #{trial.number}: {searched(trial.config)}")  # what `t` took, said first
        self.train_trial(found[0], trial.number, dict(trial.config))

    @work(thread=True, group="runs", exit_on_error=False)
    def train_trial(self, run: protocol.RunDir, number: int, searched: dict[str, object]) -> None:
        """Launch the trial's config as a normal run and select it."""
        from console.services import trials

        try:
            new = trials.train_trial(run, number, searched, root=self.home)
        except protocol.ConfigError as e:
            self.call_from_thread(self._done, f"cannot train trial #{number}: {e}", "error")
            return
        self.call_from_thread(self._launched, new.id)

    def _done(self, message: str, severity: str = "information") -> None:
        self.notify(message, severity=severity)  # type: ignore[arg-type]
        self.tailer.poke()
