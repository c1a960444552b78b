"""What the console and the trainers share: config schema, events, run directories. Stdlib only.

The names below are loaded from their modules on first use (PEP 562, as `trainers.report` is), so that a
process needing one of them (the console's first frame needs only `home`) does not load the config
schema with it. `from trainconsole.protocol import Config` and `protocol.Config` work as with eager
imports.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: Each name this package gives, and the module it comes from.
_FROM = {
    **dict.fromkeys(["SCHEMA", "Config", "ConfigError", "apply_override", "defaults", "dumps", "load",
                     "validate"], "config"),
    **dict.fromkeys(["FINAL", "STATUSES", "Event", "EventReader", "EventWriter", "make_event", "read_all",
                     "tail"], "events"),
    "process_alive": "processes",
    **dict.fromkeys(["KINDS", "RunDir", "home", "list_runs", "new_run_id"], "rundir"),
    **dict.fromkeys(["RunBusy", "derive_status", "in_queue", "last_final", "run_status"], "status"),
    **dict.fromkeys(["request_trial_stop", "trial_stops_requested"], "trial_requests"),
}

__all__ = [
    "FINAL", "KINDS", "SCHEMA", "STATUSES", "Config", "ConfigError", "Event", "EventReader", "EventWriter",
    "RunDir", "apply_override", "defaults", "dumps", "home", "list_runs", "load", "make_event",
    "new_run_id", "read_all", "tail", "validate", "RunBusy", "derive_status", "last_final",
    "process_alive", "run_status", "in_queue", "request_trial_stop", "trial_stops_requested",
]  # (the names of _FROM)


def __getattr__(name: str) -> Any:
    """A name of `_FROM` (from its module), or a module of this package (`protocol.hosts`)."""
    module = _FROM.get(name)
    try:
        found = importlib.import_module(f"{__name__}.{module or name}")
    except ModuleNotFoundError as e:
        if e.name != f"{__name__}.{module or name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(found, name) if module else found
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from .config import SCHEMA, Config, ConfigError, apply_override, defaults, dumps, load, validate
    from .events import FINAL, STATUSES, Event, EventReader, EventWriter, make_event, read_all, tail
    from .processes import process_alive
    from .rundir import KINDS, RunDir, home, list_runs, new_run_id
    from .status import RunBusy, derive_status, in_queue, last_final, run_status
    from .trial_requests import request_trial_stop, trial_stops_requested
