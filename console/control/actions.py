"""`Control`: launch, resume, stop, kill, stop a trial, train a trial, and the reads the front ends need.

Every front end calls this and nothing below it, so a rule is made once: what a config launches (kind,
name, queue: `runs.launch`), what may be resumed, and what a session may not do at all (`read_only`).
The calls may block (a process start, a stop's grace period); the console calls them in thread workers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainers import protocol
from trainers.protocol import Config, Event, RunDir, tune_config

from . import runs


class Refused(Exception):
    """An action the control layer will not take; its message is the one line to show the user."""


@dataclass
class Control:
    """Acting on the runs of one home, for one front end's session."""

    home: Path
    read_only: bool = False

    def _allow(self, action: str) -> None:
        if self.read_only:
            raise Refused(f"{action}: refused, this session is read-only")

    def check(self, action: str) -> None:
        """Refuse (`Refused`) what this session may not do, for a front end's own step towards an action
        (the setup form, which only launches, or loads and saves files)."""
        self._allow(action)

    # -- acting ---------------------------------------------------------------------------------------

    def launch(self, config: Config, name: str = "") -> RunDir:
        """Start a validated config as a new run (a search, a script or a training run, queued if its
        `[strategy] queue` says so); detached, it outlives every front end."""
        self._allow("launch")
        return runs.launch(config, name=name, root=self.home)

    def resume(self, run: RunDir) -> RunDir:
        """Start a run that ended again from its last checkpoint (RunBusy if it is alive,
        FileNotFoundError if a training run has no checkpoint)."""
        self._allow("resume")
        return runs.resume(run)

    def stop(self, run: RunDir, grace: float = 30.0) -> str:
        """Ask the run to checkpoint and stop; kill it after `grace` seconds. Returns its status."""
        self._allow("stop")
        return runs.stop(run, grace=grace)

    def kill(self, run: RunDir) -> list[int]:
        """Kill the run's whole process tree; returns the pids that survived (none, normally)."""
        self._allow("kill")
        return runs.kill(run)

    def stop_trial(self, run: RunDir, trial_id: str) -> None:
        """Ask a search's driver to stop one trial; the search goes on."""
        self._allow("stop a trial")
        protocol.request_trial_stop(run, trial_id)

    def train_trial(self, run: RunDir, number: int, searched: dict[str, Any]) -> RunDir:
        """Launch a search's trial config (its searched values on the search's base config) as a run of
        its own, named after the search and the trial (ConfigError if the values do not fit)."""
        self._allow("train a trial")
        config = tune_config.trial_run_config(tune_config.load_tune(run.config), searched)
        return self.launch(config, name=f"{run.read_info().get('name') or 'tune'}-trial{number}")

    # -- reading --------------------------------------------------------------------------------------

    def find(self, run_id: str) -> RunDir | None:
        """The run with this id (or a unique prefix or suffix of it)."""
        return runs.find(run_id, self.home)

    def run(self, run_id: str) -> RunDir:
        """The run with exactly this id (known to exist: the console's rows)."""
        return RunDir(self.home / "runs" / run_id)

    def all_runs(self) -> list[RunDir]:
        """Every run in the home, oldest first."""
        return runs.all_runs(self.home)

    def status(self, run: RunDir) -> str:
        """The run's one status."""
        return runs.status(run)

    def summary(self, run: RunDir) -> dict[str, Any]:
        """The run as one `ls` row."""
        return runs.summary(run)

    def wait(self, run: RunDir, on_event: Callable[[Event], None] | None = None) -> str:
        """Block until the run ends, passing each new event on; its final status."""
        return runs.wait(run, on_event=on_event)
