"""`python -m trainers.tune RUN_DIR [--resume]`: a hyperparameter search, reporting to RUN_DIR/events.jsonl.

Exit codes as for a run: 0 finished or stopped (SIGTERM), 1 failed, 2 bad invocation or invalid config.
"""

from __future__ import annotations

import argparse
import sys
import time

from .. import __main__ as run_main
from ..protocol import ConfigError, EventWriter, RunDir
from ..protocol.tune_config import load_tune
from . import session, stopping


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line: a run directory and an optional --resume."""
    parser = argparse.ArgumentParser(prog="python -m trainers.tune", description="Run one tune run.")
    parser.add_argument("run_dir", help="the run directory (holds config.toml and run.json)")
    parser.add_argument("--resume", action="store_true", help="continue the saved search")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the search described by RUN_DIR/config.toml and return the exit code."""
    args = parse_args(argv)
    stopping.install()  # before importing ray: a SIGTERM during start-up still stops cleanly
    run = RunDir(args.run_dir)
    if not run.path.is_dir():
        print(f"python -m trainers.tune: {run.path} is not a run directory", file=sys.stderr)
        return run_main.EXIT_USAGE
    events = EventWriter(run.events, run.read_info().get("id") or run.id)
    code = search(run, events, args.resume)
    with run.lock():
        run.update_info(ended_at=time.time(), exit_code=code)
    events.close()
    return code


def search(run: RunDir, events: EventWriter, resume: bool) -> int:
    """Validate, then search; every exception becomes a `failed` event."""
    config = None
    try:
        config = load_tune(run.config)
        if not config["tune"]["ray_address"]:
            session.loopback_only()
        from .driver import run_search  # imports ray: after the config is known to be valid

        status = run_search(run, config, events, resume)
        return run_main.EXIT_FAILED if status == "failed" else run_main.EXIT_OK
    except Exception as exc:  # noqa: BLE001 - the run must always end with a final event
        run_main.report_failure(exc, events, config)
        return run_main.EXIT_USAGE if isinstance(exc, ConfigError) else run_main.EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
