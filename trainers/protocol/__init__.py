"""What the console and the trainers share: config schema, events, run directories. Stdlib only."""

from .config import SCHEMA, Config, ConfigError, apply_override, defaults, dumps, load, validate
from .events import FINAL, STATUSES, Event, EventReader, EventWriter, make_event, read_all, tail
from .processes import process_alive
from .rundir import KINDS, RunDir, home, list_runs, new_run_id
from .status import RunBusy, derive_status, in_queue, last_final, run_status
from .trial_requests import request_trial_stop, trial_stops_requested

__all__ = [
    "FINAL", "KINDS", "SCHEMA", "STATUSES", "Config", "ConfigError", "Event", "EventReader", "EventWriter",
    "RunDir", "apply_override", "defaults", "dumps", "home", "list_runs", "load", "make_event",
    "new_run_id", "read_all", "tail", "validate", "RunBusy", "derive_status", "last_final",
    "process_alive", "run_status", "in_queue", "request_trial_stop", "trial_stops_requested",
]
