"""What the dashboard's key groups (`RunMarks`, `TableKeys`, `FormKeys`, mixed into `MainScreen`) use of
the screen: its parts, named here for type checkers, so that no module is typed as the screen itself."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.screen import Screen

    from trainconsole.console.core.board import Board
    from trainconsole.console.core.selection import Selection
    from trainconsole.console.screens.frames import Frames
    from trainconsole.console.screens.run_commands import RunCommands
    from trainconsole.trainers.protocol import RunDir

    class Parts(Screen[None]):
        """The dashboard as its key groups see it."""

        board: Board
        selection: Selection
        commands: RunCommands
        frames: Frames
        clock: Callable[[], float]
        path: str

        def refused(self, action: str) -> bool:
            """Whether the control layer refuses the action in this session (said in a toast)."""

        def show_pane(self, name: str) -> None:
            """Bring a pane forward."""

        def _selected_run(self) -> RunDir | None:
            """The run under the cursor (else a notice and None)."""

else:
    Parts = object
