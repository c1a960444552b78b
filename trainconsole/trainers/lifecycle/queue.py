"""`python -m trainconsole.trainers.lifecycle.queue RUN_DIR -- COMMAND...`: a queued run's waiter, then the
run itself.

The waiter is the run's leader while it waits (so `ls` says `queued`, `kill` removes it and a console or
SSH link may come and go: no daemon). It starts the run, by exec'ing COMMAND in its own process (same
pid and start time, so run.json stays true), once (1) every run queued before it has started or ended,
(2) the newest of those left the queue SETTLE_S ago or more (its memory shows by then), and (3) each of its
devices has `[strategy] min_free_mb` free: NVML's free memory on GPUs, available host memory on CPU.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from types import FrameType

from trainconsole.protocol import ConfigError, EventWriter, RunDir, list_runs, load, run_status

from . import free_memory
from .signals import hold_stops, release_stops
from .watchdog import Watchdog

POLL_S = float(os.environ.get("TRAINCONSOLE_QUEUE_POLL_S", "0.5"))
#: After a queued run starts, the next one waits this long before trusting the free memory it sees.
SETTLE_S = float(os.environ.get("TRAINCONSOLE_QUEUE_SETTLE_S", "15"))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """RUN_DIR, then `--` and the command that runs the run."""
    parser = argparse.ArgumentParser(prog="python -m trainconsole.trainers.lifecycle.queue")
    parser.add_argument("run_dir")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS...")
    args = parser.parse_args(argv)
    args.command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not args.command:
        parser.error("a command to run is required after --")
    return args


def main(argv: list[str] | None = None) -> int:
    """Wait for the run's turn and room on its devices, then become its process."""
    args = parse_args(argv)
    run = RunDir(args.run_dir)
    writer = EventWriter(run.events, run.id)
    signal.signal(signal.SIGTERM, lambda signum, frame: _stopped(writer, signum, frame))
    signal.signal(signal.SIGINT, lambda signum, frame: _stopped(writer, signum, frame))
    release_stops()
    watchdog = Watchdog.start(run)  # beats while the run waits; the run's own entry point beats on
    try:
        strategy = load(run.config)["strategy"]
    except ConfigError as e:
        writer.emit("failed", cause=f"ConfigError: {e}", hint="fix config.toml")
        return 2
    need, devices = strategy["min_free_mb"], strategy["devices"]
    writer.emit("queued", min_free_mb=need, devices=devices)
    while not (my_turn(run) and free_memory.enough(devices, need)):
        time.sleep(POLL_S)
    with run.lock():  # from here the run is no longer queued, and the next waiter counts its settling time
        run.update_info(dequeued_at=time.time())
    writer.close()
    watchdog.close(ended=False)  # the same pid beats on once the command has exec'd
    hold_stops()  # a stop from here on waits for the run's own handler (the mask survives exec)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.execvp(args.command[0], args.command)
    return 1  # not reached


def _stopped(writer: EventWriter, signum: int, frame: FrameType | None) -> None:
    writer.emit("stopped", queued=True)
    sys.exit(0)


def my_turn(run: RunDir) -> bool:
    """Whether every run queued before this one has left the queue, the last of them SETTLE_S ago."""
    mine = run.read_info().get("started_at") or 0.0
    newest_start = 0.0
    for other in list_runs(run.path.parent.parent):
        info = other.read_info()
        if other.id == run.id or not info.get("queued") or (info.get("started_at") or 0.0) >= mine:
            continue
        if run_status(other, info=info) == "queued":
            return False
        newest_start = max(newest_start, info.get("dequeued_at") or 0.0)
    return time.time() - newest_start >= SETTLE_S


if __name__ == "__main__":
    sys.exit(main())
