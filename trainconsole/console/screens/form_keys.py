"""The dashboard's keys that fill the setup form from a file or a run, and save it: `o` loads a config,
`w` saves the form, `c` compares the marked runs (whose `e` puts one run's config in the form, the keys
that differ highlighted). A mixin of `MainScreen`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainconsole.console import demos
from trainconsole.console.screens.dashboard_parts import Parts
from trainconsole.console.screens.path_screen import PathScreen
from trainconsole.console.widgets.run_form import RunForm
from trainconsole.trainers import protocol
from trainconsole.trainers.protocol import tune_config

#: The configs shipped with trainconsole: `w` never proposes to overwrite one.
EXAMPLES = demos.FOLDER.resolve()


def save_proposal(path: str) -> str:
    """Where `w` proposes to save the form: the file it was loaded from, unless that is a shipped example
    (then a file of the same name in the working directory, or `NAME-mine.toml` beside it if that is one)."""
    target = Path(path).expanduser().resolve()
    if not target.is_relative_to(EXAMPLES):
        return path
    here = Path.cwd() / target.name
    if here.resolve().is_relative_to(EXAMPLES) or here.resolve() == target:
        here = Path.cwd() / f"{target.stem}-mine.toml"
    return str(here)


class FormKeys(Parts):
    """Load, save, compare and edit: the keys between config files, runs and the form."""

    def action_load(self) -> None:
        """Ask for a config TOML and load it into the form."""
        if self.refused("loading a config"):
            return
        self.app.push_screen(PathScreen("Load a run or tune config (TOML):", self.path), self._load)

    def _load(self, path: str | None) -> None:
        if not path:
            return
        try:
            tune = "tune" in protocol.config.read(path)
            config = tune_config.load_tune(path) if tune else protocol.load(path)
        except protocol.ConfigError as e:
            self.notify(str(e), severity="error", timeout=8)
            return
        self.path = path
        self.query_one(RunForm).load(config, path)
        self.show_pane("setup")

    def action_save(self) -> None:
        """Ask for a path and save the form's config there as TOML."""
        if self.refused("saving a config"):
            return
        if self.query_one(RunForm).check() is None:
            self.notify("fix the config first: see the setup pane", severity="error")
            return
        self.app.push_screen(PathScreen("Save the config as:", save_proposal(self.path)), self._save)

    def _save(self, path: str | None) -> None:
        config = self.query_one(RunForm).check()
        if not path or config is None:
            return
        try:
            Path(path).expanduser().write_text(protocol.dumps(config))
        except OSError as e:
            self.notify(f"could not save {path}: {e.strerror}", severity="error")
            return
        self.path = path
        self.notify(f"saved {path}")

    def action_compare(self) -> None:
        """Compare the runs marked with space (two or more); its `e` fills the form from one of them."""
        from trainconsole.console.core.compare import compare
        from trainconsole.console.screens.compare_screen import CompareScreen

        ids = self.selection.compared(self.board)
        if len(ids) < 2:
            self.notify("mark two or more runs with space first", severity="warning")
            return
        if self.frames.want_histories(self.board, ids):  # rows from the run index: their logs first
            self.set_timer(0.05, self.action_compare)
            return
        runs = [self.board.runs[i] for i in ids]
        configs = [self._run_config(i) for i in ids]
        self.app.push_screen(CompareScreen(compare(runs, configs, self.clock()), runs), self._edit)

    def _run_config(self, run_id: str) -> dict[str, Any]:
        try:
            return protocol.config.read(self.commands.control.run(run_id).config)
        except protocol.ConfigError:  # unreadable: the run is compared on its results alone
            return {}

    def _edit(self, choice: tuple[str, list[str]] | None) -> None:
        """The compare view's `e`: the chosen run's config in the form, the differing keys highlighted."""
        if choice is None or self.refused("editing a run's config"):
            return
        run_id, differs = choice
        path = self.commands.control.run(run_id).config
        try:
            tune = "tune" in protocol.config.read(path)
            config = tune_config.load_tune(path) if tune else protocol.load(path)
        except protocol.ConfigError as e:
            self.notify(f"cannot edit {run_id}: {e}", severity="error", timeout=8)
            return
        form = self.query_one(RunForm)
        form.load(config, f"run {run_id}: edit, then enter (or esc, l) launches")
        shown = form.mark_differing(differs)
        self.show_pane("setup")
        if shown:
            form.query_one(f"#{shown[0]}").focus()
