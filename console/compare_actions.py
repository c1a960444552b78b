"""`c` on the runs table: compare the marked runs; `e` there fills the setup form from one of them.

A mixin of the app (like `run_actions`). The runs come from the board (already read, so the view opens
at once); only their config.toml files are read here. `l` then launches the form as usual.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from console.core.state import Board
from trainers import protocol

if TYPE_CHECKING:
    from console.screens.compare_screen import Edit
    from console.screens.main_screen import MainScreen


class CompareActions:
    """Open the compare view; take its `e` into the setup form (the app provides the attributes below)."""

    home: Path
    board: Board
    main: MainScreen
    marked: list[str]
    clock: Any

    def compared(self) -> list[str]:
        """The marked runs the board still has, in marking order (which gives each its colour)."""
        return [run_id for run_id in self.marked if run_id in self.board.runs]

    def action_compare(self) -> None:
        """Compare the runs marked with space (two or more)."""
        from console.core.compare import compare
        from console.screens.compare_screen import CompareScreen

        ids = self.compared()
        if len(ids) < 2:
            self.notify("mark two or more runs with space first", severity="warning")
            return
        runs = [self.board.runs[i] for i in ids]
        configs = [self._config(i) for i in ids]
        screen = CompareScreen(compare(runs, configs, self.clock()), runs)
        self.push_screen(screen, self._edit)

    def _config(self, run_id: str) -> dict[str, Any]:
        try:
            return protocol.config.read(self.home / "runs" / run_id / "config.toml")
        except protocol.ConfigError:  # unreadable: the run is compared on its results alone
            return {}

    def _edit(self, choice: Edit | None) -> None:
        """The compare view's `e`: the chosen run's config in the form, the differing keys highlighted."""
        if choice is None:
            return
        from console.widgets.run_form import RunForm, field_id
        from trainers.protocol.tune_config import load_tune

        run_id, differs = choice
        path = self.home / "runs" / run_id / "config.toml"
        try:
            tune = "tune" in protocol.config.read(path)
            config = load_tune(path) if tune else protocol.load(path)
        except protocol.ConfigError as e:
            self.notify(f"cannot edit {run_id}: {e}", severity="error", timeout=8)
            return
        form = self.main.query_one(RunForm)
        form.load(config, f"run {run_id}: edit, then enter (or esc, l) launches")
        for row in form.query(".field"):
            row.remove_class("-differs")
        fields = [field_id(*key.split(".", 1)) for key in differs if "." in key]
        shown = [f for f in fields if form.query(f"#row-{f}")]  # the differing keys the form has
        for fid in shown:
            form.query_one(f"#row-{fid}").add_class("-differs")
        self.main.show_pane("setup")
        if shown:
            form.query_one(f"#{shown[0]}").focus()
