"""`trainconsole compare`: runs read from their directories into the compare view's pure core."""

from __future__ import annotations

import time
from typing import Any

from trainconsole.trainers import protocol
from trainconsole.trainers.protocol import RunDir, hosts

from ..core.compare import Comparison, compare
from ..core.run_state import RunState


def state_of(run: RunDir) -> RunState:
    """The run as the console builds it: run.json, every event, and whether its process lives."""
    state = RunState(run.id)
    info = run.read_info()
    state.set_info(info)
    for event in protocol.read_all(run.events):
        state.apply(event)
    state.alive = hosts.alive(run.path, info)
    return state


def config_of(run: RunDir) -> dict[str, Any]:
    """The run's config.toml as written ({} when unreadable: compared on its results alone)."""
    try:
        return protocol.config.read(run.config)
    except protocol.ConfigError:
        return {}


def comparison(runs: list[RunDir]) -> Comparison:
    """Compare these runs, in this order."""
    return compare([state_of(r) for r in runs], [config_of(r) for r in runs], time.time())
