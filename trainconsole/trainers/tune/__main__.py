"""`python -m trainconsole.trainers.tune RUN_DIR [--resume]`: a hyperparameter search, reporting to
RUN_DIR/events.jsonl.

Exit codes as for a run: 0 finished or stopped (SIGTERM), 1 failed, 2 bad invocation or invalid config.
"""

from __future__ import annotations

import os
import sys

from trainconsole.protocol import ConfigError, EventWriter, RunDir
from trainconsole.protocol.tune_config import load_tune

from .. import __main__ as run_main
from .. import entry
from ..slurm.ray_nodes import ENV_ADDRESS
from . import session, stopping


def main(argv: list[str] | None = None) -> int:
    """Run the search described by RUN_DIR/config.toml and return the exit code."""
    stopping.install()  # before importing ray: a SIGTERM during start-up still stops cleanly
    return entry.main(argv, "python -m trainconsole.trainers.tune", "Run one tune run.",
                      "continue the saved search",
                      search)


def search(run: RunDir, events: EventWriter, resume: bool) -> int:
    """Validate, then search; every exception becomes a `failed` event."""
    config = None
    try:
        config = load_tune(run.config)
        if not (config["tune"]["ray_address"] or os.environ.get(ENV_ADDRESS)):
            session.loopback_only()
        from .driver import run_search  # imports ray: after the config is known to be valid

        status = run_search(run, config, events, resume)
        return entry.EXIT_FAILED if status == "failed" else entry.EXIT_OK
    except Exception as exc:  # noqa: BLE001 - the run must always end with a final event
        run_main.report_failure(exc, events, config)
        return entry.EXIT_USAGE if isinstance(exc, ConfigError) else entry.EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
