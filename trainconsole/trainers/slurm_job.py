"""`python -m trainconsole.trainers.slurm_job RUN_DIR -- COMMAND...`: a Slurm job's run process, on its node.

The job's batch script (`RUN_DIR/slurm.sh`, written by the console's `control/slurm.py`) execs this. It
records where the run now lives (host, pid and start time, the job's nodes) in run.json, so that every
host judges the run as any other: by its pid on this host, by its heartbeat elsewhere; sends its output
to the run's stdout.log / stderr.log; then becomes COMMAND (the run's own process, e.g. `python -m
trainconsole.trainers RUN_DIR`) by exec: the same pid, so run.json stays true, and a stop that Slurm
sends to the batch step (`scancel --signal=TERM --batch`) reaches the run's own handler.
"""

from __future__ import annotations

import os
import sys
import time

from trainconsole.trainers.protocol import RunDir, hosts
from trainconsole.trainers.protocol.processes import own_start_time

from .signals import hold_stops


def record(run: RunDir) -> None:
    """Write this process (the run's from now on) and the job's nodes into run.json, under its lock."""
    now = time.time()
    with run.lock():
        info = run.read_info()
        slurm = {**(info.get("slurm") or {}), "job_id": os.environ.get("SLURM_JOB_ID", ""),
                 "nodes": os.environ.get("SLURM_JOB_NODELIST", ""), "restarts":
                 int(os.environ.get("SLURM_RESTART_COUNT") or 0)}
        run.write_info({**info, "host": hosts.this_host(), "pid": os.getpid(), "pgid": os.getpgid(0),
                        "pid_started": own_start_time(), "started_at": now, "dequeued_at": now,
                        "ended_at": None, "slurm": slurm})


def main(argv: list[str] | None = None) -> int:
    """Record this process as the run's, then exec the run's command."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 3 or argv[1] != "--":
        print("usage: python -m trainconsole.trainers.slurm_job RUN_DIR -- COMMAND...", file=sys.stderr)
        return 2
    run, command = RunDir(argv[0]), argv[2:]
    hold_stops()  # a stop from now on waits for the run's own handler (the mask survives exec)
    record(run)
    for path, fd in ((run.stdout, 1), (run.stderr, 2)):
        out = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.dup2(out, fd)
        os.close(out)
    os.execvp(command[0], command)
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(main())
