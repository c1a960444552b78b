"""The dashboard's lifecycle keys carried out, on the runs the screen chose (`Selection.targets`): `s`, `k`,
`r` and delete take every run given at once, with one confirm naming how many (`k` and delete always ask;
`s` and `r` ask when they act on more than one). Each calls the control layer in a thread worker (a process
start, a stop's grace period or the wait for killed processes may block) and posts how it ended to the
screen (`Done`, `Launched`), which says it in a toast."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from textual.message import Message

from trainconsole import protocol
from trainconsole.console.screens.confirm_screen import ConfirmScreen
from trainconsole.control import Refused
from trainconsole.protocol import Config, RunDir

if TYPE_CHECKING:
    from textual.screen import Screen

    from trainconsole.control import Control


def runs_named(ids: list[str]) -> str:
    """`run ID` for one run, `N runs` for more."""
    return f"run {ids[0]}" if len(ids) == 1 else f"{len(ids)} runs"


class RunCommands:
    """Launch, stop, kill, resume, delete, tag and the trials' keys for one dashboard (the control layer's
    calls off the UI thread)."""

    @dataclass
    class Done(Message):
        """An action ended: what to say, and how loudly."""

        message: str
        severity: str = "information"

    @dataclass
    class Launched(Message):
        """A run was launched from this screen."""

        run_id: str

    def __init__(self, screen: Screen[Any], control: Control) -> None:
        self.screen, self.control = screen, control

    def _in_thread(self, name: str, body: Callable[[], None]) -> None:
        def refusable() -> None:
            try:
                body()
            except Refused as e:  # the control layer's one line (a read-only session, say)
                self._report(str(e), "warning")

        self.screen.run_worker(refusable, name=name, thread=True, group="runs", exit_on_error=False)

    def _report(self, message: str, severity: str = "information") -> None:
        self.screen.post_message(self.Done(message, severity))  # (thread-safe)

    def refused(self, action: str) -> bool:
        """Whether the control layer refuses `action` in this session (then it is said in a toast)."""
        try:
            self.control.check(action)
        except Refused as e:
            self.screen.notify(str(e), severity="warning")
            return True
        return False

    def _confirmed(self, question: str, act: Callable[[], None]) -> None:
        self.screen.app.push_screen(ConfirmScreen(question), lambda yes: act() if yes else None)

    # -- the keys: a confirm where one is due, then the control layer ---------------------------------

    def stop(self, found: list[RunDir]) -> None:
        """`s`: ask the runs to checkpoint and stop (more than one: after a confirm)."""
        if len(found) == 1:
            self.screen.notify(f"stopping {found[0].id}: it checkpoints, then exits")
            self._stop(found)
        elif found and not self.refused("stop"):
            question = f"Stop {len(found)} runs?\nEach checkpoints, then exits."
            self._confirmed(question, lambda: self._stop(found))

    def kill(self, found: list[RunDir]) -> None:
        """`k`: kill the runs and all their processes, after a confirm (none for what would be refused)."""
        if found and not self.refused("kill"):
            one = len(found) == 1
            question = f"Kill {runs_named([run.id for run in found])} and every process " \
                       f"{'it' if one else 'they'} started?\n{'It' if one else 'They'} will not checkpoint."
            self._confirmed(question, lambda: self._kill(found))

    def resume(self, found: list[RunDir]) -> None:
        """`r`: start the runs again from their last checkpoints (more than one: after a confirm; a Slurm
        run after asking for its new job's options, as `resume ID --time 2:00:00`)."""
        slurm = (self.control.info(found[0]).get("slurm") or {}) if len(found) == 1 else {}
        if slurm:
            if not self.refused("resume"):
                self._ask_slurm(found[0], slurm)
        elif len(found) == 1:
            self._resume(found)
        elif found and not self.refused("resume"):
            self._confirmed(f"Resume {len(found)} runs from their last checkpoints?",
                            lambda: self._resume(found))

    def delete(self, found: list[RunDir]) -> None:
        """delete: move the runs to the home's trash, after a confirm."""
        if found:
            question = f"Move {runs_named([run.id for run in found])} to the trash?\n" \
                       "`trainconsole restore ID` brings a run back."
            self._confirmed(question, lambda: self._delete(found))

    def stop_trial(self, run: RunDir, trial_id: str, number: int) -> None:
        """`x`: ask one trial of a search to stop (a flag file: on the UI thread); the search goes on."""
        if not self.refused("stop a trial"):
            self.control.stop_trial(run, trial_id)
            self.screen.notify(f"asked trial #{number} to stop; the search goes on")

    # -- carried out, in thread workers ---------------------------------------------------------------

    def launch(self, config: Config) -> None:
        """Start the config as a new run (detached: it outlives the console) and select it."""
        def body() -> None:
            run = self.control.launch(config)
            self.screen.post_message(self.Launched(run.id))
        self._in_thread("launch_run", body)

    def _stop(self, found: list[RunDir]) -> None:
        """SIGTERM each run, then SIGKILL after the grace period (all at once: the grace runs in parallel)."""
        for run in found:
            self._in_thread("stop_run", lambda run=run: self._report(f"{run.id}: {self.control.stop(run)}"))

    def _kill(self, found: list[RunDir]) -> None:
        """SIGKILL each run's process group and descendants. A run killed here logs `killed`, whose live
        notice says so (one notice per kill); said here: pids that survived, and runs with nothing to kill."""
        def body() -> None:
            failed, idle = [], []
            for run in found:
                done = self.control.kill(run)
                if done.survivors:
                    failed.append(f"{run.id} (pids {done.survivors})")
                elif not done.ended:  # no `killed` logged now
                    idle.append(f"{run.id} ({done.was})")
            if failed:
                self._report(f"could not kill {', '.join(failed)}", "error")
            if idle:
                self._report(f"nothing to kill: {', '.join(idle)}", "warning")
        self._in_thread("kill_run", body)

    def _ask_slurm(self, run: RunDir, slurm: dict[str, Any]) -> None:
        """The resume form of a Slurm run: its new job's options on one line (empty: as before)."""
        from trainconsole.console.slurm_options import RESUME_OPTIONS, resume_line_sets
        from trainconsole.console.widgets.ask_line import AskLine

        def answer(line: str | None) -> None:
            if line is None:
                return
            try:
                sets = resume_line_sets(line)
            except ValueError as e:
                self._report(f"{run.id}: not resumed: {e}", "warning")
                return
            self._resume([run], sets)

        old = f"--time {slurm['time']}" if slurm.get("time") else ""
        flags = " ".join(f"--{flag}" for flag in RESUME_OPTIONS)
        self.screen.post_message(AskLine(f"Resume {run.id}: its Slurm job's options ({flags}; empty: as "
                                         "before)", old, answer, empty_ok=True))

    def _resume(self, found: list[RunDir], slurm: list[str] | None = None) -> None:
        """Start each run again from its last checkpoint (a Slurm run with `slurm`, its new options as
        `--set`s); a running run or none to resume from is said."""
        def body() -> None:
            for run in found:
                try:
                    self.control.resume(run, slurm=slurm or None)
                except (protocol.RunBusy, FileNotFoundError, Refused) as e:  # a second `r`, no checkpoint
                    self._report(str(e), "warning")
                    continue
                self._report(f"{run.id}: resumed from its last checkpoint")
        self._in_thread("resume_run", body)

    def train_trial(self, run: RunDir, number: int, searched: dict[str, Any]) -> None:
        """Launch a trial's config as a normal run and select it."""
        def body() -> None:
            try:
                new = self.control.train_trial(run, number, searched)
            except protocol.ConfigError as e:
                self._report(f"cannot train trial #{number}: {e}", "error")
                return
            epochs = new.epochs(new.read_info())  # the search's max_t: more than a cut trial trained
            self._report(f"training trial #{number}'s config for {epochs} epochs (the search's max_t)")
            self.screen.post_message(self.Launched(new.id))
        self._in_thread("train_trial", body)

    def _delete(self, found: list[RunDir]) -> None:
        """Move runs to the home's trash (refused whole if one is running or queued: said in a toast)."""
        def body() -> None:
            moved = self.control.remove(found)
            self._report(f"moved {len(moved)} run{'' if len(moved) == 1 else 's'} to the trash")
        self._in_thread("delete_runs", body)

    def tag(self, run: RunDir, add: list[str], drop: list[str]) -> None:
        """Add and remove a run's tags (meta.json, under its lock)."""
        def body() -> None:
            tags = self.control.tag(run, add, drop)
            self._report(f"{run.id} tags: {' '.join(tags) or '(none)'}")
        self._in_thread("tag_run", body)

    def note(self, run: RunDir, text: str) -> None:
        """Set (empty text: remove) a run's note."""
        def body() -> None:
            self.control.note(run, text)
            self._report(f"{run.id}: note {'set' if text.strip() else 'removed'}")
        self._in_thread("note_run", body)
