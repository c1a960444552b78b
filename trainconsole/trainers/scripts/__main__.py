"""`python -m trainconsole.trainers.scripts RUN_DIR [--resume]`: the leader process of a run of kind `script`.

Exit codes: 0 finished or stopped, 1 failed, 2 bad invocation or invalid config. At the end run.json gets
`ended_at` and `exit_code`; the status is derived (protocol.run_status).
"""

from __future__ import annotations

import signal
import sys

from trainconsole.protocol import ConfigError, EventWriter, RunDir, load
from trainconsole.trainers import entry
from trainconsole.trainers.entry import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from trainconsole.trainers.lifecycle.signals import release_stops

from .runner import ScriptRun
from .tracebacks import hint


def main(argv: list[str] | None = None) -> int:
    """Run the script described by RUN_DIR/config.toml and return the exit code."""
    early: list[int] = []  # a stop that comes before the script starts
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda signum, frame: early.append(signum))
    release_stops()
    return entry.main(argv, "python -m trainconsole.trainers.scripts", "Run a script as a run.",
                      "start the script again",
                      lambda run, writer, resume: execute(run, writer, resume, early))


def execute(run: RunDir, writer: EventWriter, resumed: bool, early: list[int]) -> int:
    """Check the config, start the script (under torchrun with --nproc) and wait for it."""
    try:
        config = load(run.config)
    except ConfigError as e:
        writer.emit("failed", cause=f"ConfigError: {e}", hint=hint(str(e)) or "fix config.toml")
        return EXIT_USAGE
    strategy = "torchrun" if config["script"]["nproc"] else "script"
    with run.lock():
        run.update_info(strategy=strategy)
    script = ScriptRun(run, config, writer)
    script.stop_asked = bool(early)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, script.ask_stop)
    code = script.execute(resumed=resumed)
    return EXIT_OK if code == 0 or script.stop_asked else EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
