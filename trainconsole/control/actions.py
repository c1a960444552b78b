"""`Control`: launch, resume, stop, kill, stop a trial, train a trial, and the reads the front ends need.

Every front end calls this and nothing below it, so a rule is made once: what a config launches (kind,
name, queue: `runs.launch`), what may be resumed, and what a session may not do at all (`read_only`).
The calls may block (a process start, a stop's grace period); the console calls them in thread workers.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainconsole import protocol
from trainconsole.protocol import Config, Event, RunDir, index, places, tune_config
from trainconsole.protocol.changes import note_changed
from trainconsole.protocol.meta import read_meta, tags_of, update_meta
from trainconsole.protocol.run_row import LIVE
from trainconsole.protocol.rundir import quoted_id

from . import extras, interpreter, ray_address, runs, trash
from . import prune as pruning
from .places import Kill
from .places.sbatch import SlurmError

#: What a tag may be: one word, so that filters (`tag:NAME`) and the command line read it back whole.
TAG = re.compile(r"[\w./-]+")


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
        kind = runs.kind_of(config)
        self._require_extras(config, kind)
        unreachable = ray_address.first_unreachable(config, kind)
        if unreachable:
            raise Refused(unreachable)
        if kind == "script":
            config = self._script_python(config)
        try:
            return runs.launch(config, name=name, root=self.home)
        except SlurmError as e:  # sbatch's own words; nothing was left behind
            raise Refused(str(e)) from e

    def resume(self, run: RunDir, epochs: int | None = None, slurm: list[str] | None = None) -> RunDir:
        """Start a run that ended again from its last checkpoint (refused while it is alive, here or
        on another host; FileNotFoundError if a training run has no checkpoint). A finished run has
        nothing left to train: refused, unless `epochs` raises a training run's total (its config says so
        from then on)."""
        self._allow("resume")
        pruned = read_meta(run).get("pruned")
        if pruned and not run.last_ckpt.exists():
            raise Refused(f"resume: run {run.id} has no last.pt: its checkpoints were pruned (prune --keep "
                          f"{pruned.get('keep')}); its history remains, start a new run from its config.toml")
        summary = runs.summary(run)
        kind, done = summary.get("kind") or "train", summary["last"].get("epoch")
        if epochs is not None:
            if kind != "train":
                raise Refused(f"--epochs: only a training run's epochs can grow; {run.id} is a {kind} run")
            if isinstance(done, int) and epochs <= done:
                raise Refused(f"--epochs: {epochs} is not more than the {done} epochs {run.id} has trained")
        elif summary["status"] == "finished":
            more = " (resume ID --epochs N to train on)" if kind == "train" else ""
            raise Refused(f"run {run.id} has finished: nothing left to resume{more}")
        if kind != "script":
            loaded = tune_config.load_tune(run.config) if kind == "tune" else protocol.load(run.config)
            self._require_extras(loaded, kind)
        try:
            return runs.resume(run, epochs=epochs, slurm=slurm)
        except protocol.RunBusy as e:  # `run ID is running on HOST`
            raise Refused(str(e)) from e
        except SlurmError as e:  # sbatch refused the new job: the run stays as it was
            raise Refused(str(e)) from e

    @staticmethod
    def _require_extras(config: Config, kind: str) -> None:
        """Refuse a run whose optional parts are not installed, naming the extra that brings them."""
        line = extras.first_missing(config, kind)
        if line:
            raise Refused(line)

    @staticmethod
    def _script_python(config: Config) -> Config:
        """The config with the Python its script runs with (`[script] python`, else the default) made an
        absolute path; refused when that is no Python, or lacks the torch that `nproc` needs."""
        script = config["script"]
        given = script["python"]
        python = os.path.abspath(os.path.expanduser(given)) if given else interpreter.default_python()
        line = interpreter.problem(python, needs_torch=bool(script["nproc"]))
        if line:
            raise Refused(line)
        return {**config, "script": {**script, "python": python}}

    def stop(self, run: RunDir, grace: float = 30.0) -> str:
        """Ask the run to checkpoint and stop; kill it after `grace` seconds. Returns its status."""
        self._allow("stop")
        try:
            return runs.stop(run, grace=grace)
        except SlurmError as e:  # Slurm not answering (nothing done, nothing recorded), scancel failed
            raise Refused(str(e)) from e

    def kill(self, run: RunDir) -> Kill:
        """Kill the run's whole process tree: its status before, whether this kill ended it, and the pids
        that survived (none, normally)."""
        self._allow("kill")
        try:
            return runs.kill_run(run)
        except SlurmError as e:  # as for stop
            raise Refused(str(e)) from e

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

    def row(self, run: RunDir) -> dict[str, Any]:
        """The run as one `ls` row, derived now (what a summary of `summaries` holds as its `row`)."""
        return runs.summary(run)

    def wait(self, run: RunDir, on_event: Callable[[Event], None] | None = None) -> str:
        """Block until the run ends, passing each new event on; its final status."""
        return runs.wait(run, on_event=on_event)

    def events(self, run: RunDir) -> list[Event]:
        """Every complete event of the run's log, oldest first."""
        return protocol.read_all(run.events)

    def reader(self, run: RunDir) -> protocol.EventReader:
        """A reader of the run's log from its start (each `read_lines` gives what it grew by)."""
        return protocol.EventReader(run.events)

    def meta(self, run: RunDir) -> dict[str, Any]:
        """The run's tags and note (meta.json; {} if none)."""
        return read_meta(run)

    def info(self, run: RunDir) -> dict[str, Any]:
        """The run's run.json (how it was started: kind, pid, host, ...; {} before it is written)."""
        return run.read_info()

    def alive(self, run: RunDir, info: dict[str, Any]) -> bool:
        """Whether the run's process lives (on another host: whether its heartbeat is fresh)."""
        return bool(places.alive(run.path, info))

    def valid_config(self, run: RunDir) -> Config:
        """The run's config, validated as a launch takes it (a run or a tune config; ConfigError)."""
        return tune_config.load_any(run.config)

    def config(self, run: RunDir) -> dict[str, Any]:
        """The run's config.toml as written ({} when unreadable: it is compared on its results alone)."""
        try:
            return protocol.config.read(run.config)
        except protocol.ConfigError:
            return {}

    # -- many runs: the index, delete, prune, tags and notes (issue 26) ---------------------------------

    def summaries(self, found: list[RunDir] | None = None,
                  wanted: Callable[[index.Summary], bool] | None = None) -> Sequence[index.Summary]:
        """Each run's summary (its `ls` row, best metrics, config keys), read from the run index where it
        is still true; every run of the home when `found` is None; only those `wanted` wants (a filter)."""
        return runs.summaries(self.home, found, wanted)

    def trashed(self) -> list[index.Summary]:
        """The summaries of the runs in the trash (not indexed: the trash is rarely listed)."""
        return [index.summarize(run, runs.status) for run in trash.trashed(self.home)]

    def remove(self, found: list[RunDir], purge: bool = False) -> list[RunDir]:
        """Move runs to the home's trash (or, with `purge`, delete them for good); a running or queued
        run refuses the whole call before any run is touched. Returns where each went."""
        self._allow("rm")
        self._refuse_live("rm", found)
        done = []
        for run in found:
            with run.lock():
                self._refuse_live("rm", [run])  # again under the lock: a resume may have just started it
                if purge:
                    trash.delete(self.home, run)
                    done.append(run)
                else:
                    done.append(trash.to_trash(self.home, run))
        note_changed(self.home, [run.id for run in found])
        return done

    def restore(self, run_id: str) -> RunDir:
        """Bring a run back from the trash, the same run as before."""
        self._allow("restore")
        run = trash.find_trashed(self.home, run_id)
        if run is None:
            raise Refused(f"id: no run in the trash matches {quoted_id(run_id)} "
                          "(see trainconsole ls --trash)")
        if (self.home / "runs" / run.id).exists():
            raise Refused(f"restore: a run {run.id} already exists; rm it first")
        back = trash.from_trash(self.home, run)
        note_changed(self.home, [back.id])
        return back

    def purge(self, older_than: float = 0.0) -> list[tuple[str, int]]:
        """Empty the trash of runs trashed at least `older_than` seconds ago; (id, bytes freed) each."""
        self._allow("purge")
        cutoff = time.time() - older_than
        return [(run.id, trash.delete(self.home, run)) for run in trash.trashed(self.home)
                if trash.trashed_at(run) <= cutoff]

    def prune(self, found: list[RunDir], keep: str = "best", dry_run: bool = False) -> list[tuple[str, int]]:
        """Delete the checkpoints of ended runs but the one `keep` names (best, last or none), keeping
        their events, config and output; (id, bytes freed or, dry, to be freed) per run that had any."""
        self._allow("prune")
        self._refuse_live("prune", found)
        out = []
        for run in found:
            with run.lock():
                files = pruning.doomed(run, keep)
                if files:
                    freed = pruning.size_of(files) if dry_run else pruning.prune(run, files, keep)
                    out.append((run.id, freed))
        if not dry_run:
            note_changed(self.home, [run_id for run_id, _ in out])
        return out

    def tag(self, run: RunDir, add: list[str], drop: list[str]) -> list[str]:
        """Add and remove tags of a run (atomic; concurrent calls all land); its tags after."""
        self._allow("tag")
        for tag in add + drop:
            if not TAG.fullmatch(tag):
                raise Refused(f"tag: {tag!r} is not a tag (letters, digits and _ . / - only)")

        def change(meta: dict[str, Any]) -> dict[str, Any]:
            return {**meta, "tags": sorted((set(tags_of(meta)) | set(add)) - set(drop))}

        tags = tags_of(update_meta(run, change))
        note_changed(self.home, [run.id])
        return tags

    def note(self, run: RunDir, text: str) -> str:
        """Set a run's note (empty text removes it)."""
        self._allow("note")
        note = str(update_meta(run, lambda meta: {**meta, "note": text.strip()}).get("note"))
        note_changed(self.home, [run.id])
        return note

    def _refuse_live(self, action: str, found: list[RunDir]) -> None:
        for run in found:
            state = self.status(run)
            if state in LIVE:
                raise Refused(f"{action}: run {run.id} is {state}; stop or kill it first (nothing changed)")
