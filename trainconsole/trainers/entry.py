"""The one shape of the three `python -m` entry points (`trainers`, `trainconsole.trainers.tune`,
`trainconsole.trainers.scripts`):
parse `RUN_DIR [--resume]`, check the run directory, start its watchdog (the heartbeat, the requests of
other hosts), open its event log, run, record `ended_at` and the exit code in run.json, and return that
code. Stdlib only: each entry point installs its signal handlers before anything heavy is imported.

Exit codes: 0 finished or stopped, 1 failed, 2 bad invocation or invalid config.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable

from trainconsole.protocol import EventWriter, RunDir, index

from .lifecycle import notify
from .lifecycle.watchdog import Watchdog

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def to_stderr(text: str) -> None:
    """Write to stderr.log unbuffered, and never fail: it may be on the disk that is full, and a failed
    write must neither end the run before its final event nor leave a buffer that fails again at exit."""
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    with contextlib.suppress(OSError, ValueError):
        os.write(sys.stderr.fileno(), text.encode(errors="replace"))


#: What an entry point does with its run: (run, its event log, --resume given) -> exit code.
Body = Callable[[RunDir, EventWriter, bool], int]


def main(argv: list[str] | None, prog: str, description: str, resume_help: str, body: Body,
         reserve_bytes: int = 0) -> int:
    """Run `body` on the run directory named on the command line and return its exit code.

    `reserve_bytes`: disk ballast kept by the event log so that a full disk still leaves room for the
    run to say so and for its final event.
    """
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("run_dir", help="the run directory (holds config.toml and run.json)")
    parser.add_argument("--resume", action="store_true", help=resume_help)
    args = parser.parse_args(argv)
    run = RunDir(args.run_dir)
    if not run.path.is_dir():
        print(f"{prog}: {run.path} is not a run directory", file=sys.stderr)
        return EXIT_USAGE
    watchdog = Watchdog.start(run)  # the heartbeat and the requests of other hosts, beside the body
    events = EventWriter(run.events, run.read_info().get("id") or run.id, reserve_bytes=reserve_bytes)
    events.on_emit = notify.Troubles(run)  # a trouble met on the way goes to the notify command too
    once, ended = threading.Lock(), []

    def end(code: int) -> None:
        """What follows the body, once: by main, or by `end_now` from a thread while the body is stuck (a
        second caller waits for the first's to be done)."""
        with once:
            if not ended:
                ended.append(code)
                finish(code)

    def finish(code: int) -> None:
        events.close()
        try:
            with run.lock():  # a resume or kill of this run never interleaves with this read-modify-write
                run.update_info(ended_at=time.time(), exit_code=code)
        except OSError as exc:  # a full disk: the final event says how it ended
            to_stderr(f"cannot record ended_at in run.json: {exc}\n")
        watchdog.close()
        notify.after_run(run)  # after the end is recorded: a notice cannot change the run's status or timing
        with contextlib.suppress(OSError, ValueError, TypeError):  # (the run has ended as it says, whatever)
            index.keep_log_summary(run)  # what its log gives its row, so a listing need not read the log

    _ENDS[:] = [end]
    code = body(run, events, args.resume)
    end(code)
    return code


_ENDS: list[Callable[[int], None]] = []  # the running entry point's `end`


def end_now(code: int) -> None:
    """From any thread, after the body wrote its final event but cannot return (stuck in a library's
    native code, e.g. Ray waiting for a cluster that is gone): record the end as `main` does, and end the
    process with `code`."""
    for end in _ENDS:
        end(code)
    os._exit(code)
