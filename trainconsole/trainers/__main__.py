"""`python -m trainconsole.trainers RUN_DIR [--resume]`: one training run, reporting through
RUN_DIR/events.jsonl.

Exit codes: 0 finished or stopped by SIGTERM/SIGINT, 1 failed, 2 bad invocation or invalid config.
At the end run.json gets `ended_at` and `exit_code`; the status is derived (protocol.run_status).
"""

from __future__ import annotations

import sys
import traceback
from typing import Any

from trainconsole.protocol import ConfigError, EventWriter, RunDir, load

from . import entry
from .entry import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from .lifecycle.signals import StopFlag, install_stop_handlers
from .troubles.explain import explain, traceback_tail

RESERVE_BYTES = 1 << 20


def main(argv: list[str] | None = None) -> int:
    """Run the training described by RUN_DIR/config.toml and return the exit code."""
    stop = StopFlag()
    install_stop_handlers(stop)  # before importing torch: a SIGTERM during start-up still stops cleanly
    return entry.main(argv, "python -m trainconsole.trainers", "Run one training run.",
                      "continue from checkpoints/last.pt",
                      lambda run, events, resume: train(run, events, stop, resume)[1],
                      reserve_bytes=RESERVE_BYTES)


def train(run: RunDir, events: EventWriter, stop: StopFlag, resume: bool) -> tuple[str, int]:
    """Train and return (final status, exit code); every exception becomes a `failed` event."""
    config: dict[str, Any] | None = None
    try:
        config = load(run.config)
        from .builtin.loop import run as run_training  # imports torch: after the config is known to be valid

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
    why = explain(exc, config)
    fields = {"cause": why.cause, "hint": why.hint, "traceback": traceback_tail(exc)}
    fields.update(getattr(exc, "event_fields", {}))  # a dead DDP rank: its number, cause and traceback
    try:  # first: on a full disk, the event log's ballast makes room for it (and stderr.log has none)
        events.emit("failed", **fields)
    except OSError as write_error:  # the log itself is unwritable: stderr is all that is left
        entry.to_stderr(f"cannot write the failed event: {write_error}\n")
    entry.to_stderr("".join(traceback.format_exception(exc)))


if __name__ == "__main__":
    sys.exit(main())
