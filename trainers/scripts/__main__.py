"""`python -m trainers.scripts RUN_DIR [--resume]`: the leader process of a run of kind `script`.

Exit codes: 0 finished or stopped, 1 failed, 2 bad invocation or invalid config. At the end run.json gets
`ended_at` and `exit_code`; the status is derived (protocol.run_status).
"""

from __future__ import annotations

import argparse
import signal
import sys
import time

from trainers.protocol import ConfigError, EventWriter, RunDir, load

from .runner import ScriptRun
from .tracebacks import hint

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """A run directory, and --resume (a script starts again from its beginning)."""
    parser = argparse.ArgumentParser(prog="python -m trainers.scripts", description="Run a script as a run.")
    parser.add_argument("run_dir", help="the run directory (holds config.toml with a [script] table)")
    parser.add_argument("--resume", action="store_true", help="start the script again")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the script described by RUN_DIR/config.toml and return the exit code."""
    args = parse_args(argv)
    run = RunDir(args.run_dir)
    if not run.path.is_dir():
        print(f"python -m trainers.scripts: {run.path} is not a run directory", file=sys.stderr)
        return EXIT_USAGE
    writer = EventWriter(run.events, run.read_info().get("id") or run.id)
    early: list[int] = []  # a stop that comes before the script starts
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda signum, frame: early.append(signum))
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
    code = script.execute(resumed=args.resume)
    with run.lock():
        run.update_info(ended_at=time.time(), exit_code=code)
    writer.close()
    return EXIT_OK if code == 0 or script.stop_asked else EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
