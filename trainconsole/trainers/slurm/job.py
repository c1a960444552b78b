"""`python -m trainconsole.trainers.slurm.job RUN_DIR -- COMMAND...`: a Slurm job's run process, on its node.

The job's batch script (`RUN_DIR/slurm.sh`, written by the console's `control/slurm.py`) execs this. It
records where the run now lives (host, pid and start time, the job's nodes) in run.json, so that every
host judges the run as any other: by its pid on this host, by its heartbeat elsewhere; sends its output
to the run's stdout.log / stderr.log; then becomes COMMAND (the run's own process, e.g. `python -m
trainconsole.trainers RUN_DIR`) by exec: the same pid, so run.json stays true, and a stop that Slurm
sends to the batch step (`scancel --signal=TERM --batch`) reaches the run's own handler. A run that comes
back after its time limit (`slurm.requeue`) is a child instead, so that the job can be requeued once the
run has checkpointed and stopped.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from types import FrameType

from trainconsole.protocol import RunDir, processes
from trainconsole.protocol.places import host as hosts
from trainconsole.protocol.processes import own_start_time

from ..lifecycle.signals import hold_stops, release_stops
from . import nodes as slurm_nodes
from . import ray_nodes as slurm_ray

#: How long the batch step waits to be ended by its own requeue.
REQUEUE_WAIT_S = 120.0
#: Set once Slurm's time-limit signal (USR1) has come.
LIMIT = threading.Event()


def record(run: RunDir, pid: int, started: float) -> None:
    """Write the run's process (`pid`, started at `started`) and the job's nodes into run.json, under
    its lock."""
    now = time.time()
    with run.lock():
        info = run.read_info()
        asked = info.get("slurm") or {}
        slurm = {**asked, "job_id": os.environ.get("SLURM_JOB_ID", ""),
                 "nodes": os.environ.get("SLURM_JOB_NODELIST", ""),
                 # the partition Slurm chose (the cluster's default where none was asked)
                 "partition": os.environ.get("SLURM_JOB_PARTITION") or asked.get("partition", ""),
                 "restarts": int(os.environ.get("SLURM_RESTART_COUNT") or 0)}
        run.write_info({**info, "host": hosts.this_host(), "pid": pid, "pgid": os.getpgid(0),
                        "pid_started": started, "started_at": now, "dequeued_at": now,
                        "ended_at": None, "slurm": slurm})


def main(argv: list[str] | None = None) -> int:
    """Record this process as the run's, then become the run's command (exec), or, for a run that comes
    back after its time limit (`slurm.requeue`), run it as a child and requeue the job once it stopped."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 3 or argv[1] != "--":
        print("usage: python -m trainconsole.trainers.slurm.job RUN_DIR -- COMMAND...", file=sys.stderr)
        return 2
    run, command = RunDir(argv[0]), argv[2:]
    hold_stops()  # a stop from now on waits for the run's own handler (the mask survives exec)
    # Slurm may send the time-limit signal up to a minute early, even now: it must not end this process
    signal.signal(signal.SIGUSR1, lambda signum, frame: LIMIT.set())
    if int(os.environ.get("SLURM_RESTART_COUNT") or 0) > 0 and "--resume" not in command:
        command.append("--resume")  # the job came back: the run goes on from its last.pt
    if slurm_nodes.node_count() > 1 and run.read_info().get("kind") == "tune":
        slurm_ray.start(run)  # a search: Ray's nodes as job steps; this batch step becomes its driver
    elif slurm_nodes.node_count() > 1:  # one task per node: the rendezvous, and this node's directory
        node, command = slurm_nodes.place(run, command)
        if node is not run:
            _to_run_logs(node)
            os.execvp(command[0], command)
    _to_run_logs(run)
    if not _requeues(run):
        record(run, os.getpid(), own_start_time())
        os.execvp(command[0], command)
    return requeue_after(run, command)


def _requeues(run: RunDir) -> bool:
    slurm = run.read_info().get("slurm") or {}
    return bool(slurm.get("requeue"))


def _to_run_logs(run: RunDir) -> None:
    for path, fd in ((run.stdout, 1), (run.stderr, 2)):
        out = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.dup2(out, fd)
        os.close(out)


def requeue_after(run: RunDir, command: list[str]) -> int:
    """Run the command as a child (the run's process, recorded as such); a time-limit signal (USR1, from
    `--signal=B:USR1@N`) becomes its stop, and once it has stopped the job is requeued: it comes back
    (SLURM_RESTART_COUNT > 0) and resumes from last.pt, the same run with one history."""
    child = subprocess.Popen(command)  # starts with the stops held, as from the console
    record(run, child.pid, processes.start_time(child.pid) or time.time())

    def forward(signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGUSR1:
            LIMIT.set()
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signal.SIGTERM)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1):
        signal.signal(signum, forward)
    if LIMIT.is_set():  # it came while the child started
        forward(signal.SIGUSR1, None)
    release_stops()
    code = child.wait()
    if LIMIT.is_set() and code == 0 and os.environ.get("SLURM_JOB_ID"):
        with run.lock():  # queued again from now on, until the job's next start records it
            info = run.read_info()
            now = time.time()
            run.write_info({**info, "queued": True, "dequeued_at": None, "started_at": now, "pid": None,
                            "pid_started": None, "ended_at": None,
                            "slurm": {**(info.get("slurm") or {}), "requeued_at": now}})
        subprocess.run(["scontrol", "requeue", os.environ["SLURM_JOB_ID"]], check=False)
        # wait to be ended by the requeue: a batch step that exits first races it (the job can end FAILED)
        time.sleep(REQUEUE_WAIT_S)
    return code


if __name__ == "__main__":
    sys.exit(main())
