"""`trainconsole compare`: runs read through the control layer into the compare view's pure core."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from trainconsole.protocol import RunDir

from ..core.compare import Comparison, compare
from ..core.run_state import RunState

if TYPE_CHECKING:
    from trainconsole.control import Control


def state_of(control: Control, run: RunDir) -> RunState:
    """The run as the console builds it: run.json, every event, and whether its process lives."""
    state = RunState(run.id)
    info = control.info(run)
    state.set_info(info)
    for event in control.events(run):
        state.apply(event)
    state.alive = control.alive(run, info)
    return state


def comparison(control: Control, runs: list[RunDir]) -> Comparison:
    """Compare these runs, in this order."""
    return compare([state_of(control, r) for r in runs], [control.config(r) for r in runs], time.time())
