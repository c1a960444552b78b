"""`python -m trainers RUN_DIR [--resume]`: one training run, reporting through RUN_DIR/events.jsonl.

Exit codes: 0 finished or stopped by SIGTERM/SIGINT, 1 failed, 2 bad invocation or invalid config.
At the end run.json gets `ended_at` and `exit_code`; the status is derived (protocol.run_status).
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from typing import Any

from .protocol import ConfigError, EventWriter, RunDir, load
from .signals import StopFlag, install_stop_handlers
from .troubles.explain import explain, traceback_tail

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
RESERVE_BYTES = 1 << 20


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line: a run directory and an optional --resume."""
    parser = argparse.ArgumentParser(prog="python -m trainers", description="Run one training run.")
    parser.add_argument("run_dir", help="the run directory (holds config.toml and run.json)")
    parser.add_argument("--resume", action="store_true", help="continue from checkpoints/last.pt")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the training described by RUN_DIR/config.toml and return the exit code."""
    args = parse_args(argv)
    stop = StopFlag()
    install_stop_handlers(stop)  # before importing torch: a SIGTERM during start-up still stops cleanly
    run = RunDir(args.run_dir)
    if not run.path.is_dir():
        print(f"python -m trainers: {run.path} is not a run directory", file=sys.stderr)
        return EXIT_USAGE
    # The ballast: a full disk still leaves room for the run to say so, and for its final event.
    events = EventWriter(run.events, run.read_info().get("id") or run.id, reserve_bytes=RESERVE_BYTES)
    _, code = train(run, events, stop, args.resume)
    events.close()
    try:
        with run.lock():  # a resume or kill of this run never interleaves with this read-modify-write
            run.update_info(ended_at=time.time(), exit_code=code)
    except OSError as exc:  # a full disk: the final event says how it ended
        print(f"cannot record ended_at in run.json: {exc}", file=sys.stderr)
    return code


def train(run: RunDir, events: EventWriter, stop: StopFlag, resume: bool) -> tuple[str, int]:
    """Train and return (final status, exit code); every exception becomes a `failed` event."""
    config: dict[str, Any] | None = None
    try:
        config = load(run.config)
        from .loop import run as run_training  # imports torch: after the config is known to be valid

        outcome = run_training(config, run, events, stop, resume_path(run, config, resume, events))
        return outcome.status, EXIT_OK
    except Exception as exc:  # noqa: BLE001 - the run must always end with a final event
        report_failure(exc, events, config)
        return "failed", EXIT_USAGE if isinstance(exc, ConfigError) else EXIT_FAILED


def resume_path(run: RunDir, config: dict[str, Any], resume: bool, events: EventWriter) -> str | None:
    """checkpoints/last.pt for --resume (a warning and a fresh start if there is none yet),
    else `train.resume_from` if set."""
    if resume:
        if run.last_ckpt.exists():
            return str(run.last_ckpt)
        events.emit("warning", code="no_checkpoint", message="--resume: no checkpoints/last.pt yet",
                    hint="the run starts from scratch")
        return None
    return config["train"]["resume_from"] or None


def report_failure(exc: BaseException, events: EventWriter, config: dict[str, Any] | None) -> None:
    """Emit `failed` (cause, hint, traceback tail) and print the whole traceback to stderr.log."""
    traceback.print_exception(exc, file=sys.stderr)
    why = explain(exc, config)
    fields = {"cause": why.cause, "hint": why.hint, "traceback": traceback_tail(exc)}
    fields.update(getattr(exc, "event_fields", {}))  # a dead DDP rank: its number, cause and traceback
    try:
        events.emit("failed", **fields)
    except OSError as write_error:  # the log itself is unwritable: stderr is all that is left
        print(f"cannot write the failed event: {write_error}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
