"""A run's place on a Slurm cluster: submit it as a job, signal it, cancel it (`sbatch`, `scancel`).

A thin layer of our own over Slurm's clients rather than submitit: the run process already exists (the
same `python -m trainconsole.trainers RUN_DIR` as on this host) and reports through its event log, so
all a job needs is a readable batch script that runs it; submitit's pickled callables, its own log
folder and its requeue-by-checkpoint protocol would sit beside ours. What Slurm says of a job
(`squeue`, `sacct`) is read in `protocol.slurm_jobs`, which every reader of a run's status shares.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from typing import Any

from trainconsole.protocol import RunDir
from trainconsole.protocol.launch import ENV_LAUNCH_DIR
from trainconsole.protocol.places import slurm as slurm_jobs

#: The module a job's batch script execs on its node: it records the run's process, then becomes it.
NODE_START = "trainconsole.trainers.slurm.job"


class SlurmError(Exception):
    """Slurm refused (or cannot be reached); the message is one line, in Slurm's own words."""


def submit(run: RunDir, info: dict[str, Any], command: list[str], slurm: dict[str, Any]) -> str:
    """Write the run's batch script (`RUN_DIR/slurm.sh`) and submit it; the job id."""
    if shutil.which("sbatch") is None:
        raise SlurmError("slurm: no sbatch on the PATH: run trainconsole where Slurm's clients are "
                         "(a login node), or drop --slurm / [slurm]")
    path = run.path / slurm_jobs.SCRIPT
    path.write_text(batch_script(run, info, command, slurm))
    path.chmod(0o700)
    cwd = info.get("cwd") or os.getcwd()
    # asked first without submitting: what the cluster cannot give (more nodes than the partition has)
    # is refused now, in Slurm's words, rather than waiting in the queue forever
    tried = _call(["sbatch", "--test-only", *slurm["sbatch_args"], str(path)], cwd=cwd)
    if tried.returncode != 0:
        raise SlurmError(f"slurm: sbatch refused the job: {_last_words(tried)}")
    argv = ["sbatch", "--parsable", *slurm["sbatch_args"], str(path)]
    done = _call(argv, cwd=cwd)
    job_id = done.stdout.strip().split(";")[0] if done.returncode == 0 else ""
    if not job_id.isdigit():
        raise SlurmError(f"slurm: sbatch refused the job: {_last_words(done)}")
    return job_id


def batch_script(run: RunDir, info: dict[str, Any], command: list[str], slurm: dict[str, Any]) -> str:
    """The job's batch script: Slurm's options, then the run's own process on the allocation."""
    cwd = info.get("cwd") or os.getcwd()
    lines = ["#!/bin/bash",
             f"# trainconsole run {run.id}: this job runs the run's own process on its allocation; its",
             "# events, output and checkpoints go to this directory, as on any host.",
             *(f"#SBATCH {option}" for option in sbatch_options(run, info, slurm))]
    if slurm["sbatch_args"]:
        lines.append(f"# submitted with: sbatch {shlex.join(slurm['sbatch_args'])}")
    python = shlex.quote(sys.executable)
    # across nodes, one task per node (srun); a task's failure ends the others, never a hang (a search
    # starts its Ray's nodes as steps of its own: trainers/slurm_ray.py)
    across = slurm["nodes"] > 1 and info.get("kind") != "tune"
    launcher = "srun --ntasks-per-node=1 --kill-on-bad-exit=1 " if across else ""
    lines += ["", f"cd {shlex.quote(cwd)}", "export PYTHONUNBUFFERED=1",
              # plug-ins resolve from here, after the installed packages (never shadowing them)
              f"export {ENV_LAUNCH_DIR}={shlex.quote(cwd)}",
              f"exec {launcher}{python} -P -m {NODE_START} {shlex.quote(str(run.path))} -- "
              f"{shlex.join(command)}", ""]
    return "\n".join(lines)


def sbatch_options(run: RunDir, info: dict[str, Any], slurm: dict[str, Any]) -> list[str]:
    """The `#SBATCH` options of the run's `[slurm]` section."""
    options = [f"--job-name=tc-{info.get('name') or run.id}",
               f"--output={run.path / slurm_jobs.OUTPUT.format(job_id='%j')}", "--open-mode=append",
               f"--nodes={slurm['nodes']}", "--ntasks-per-node=1"]
    for key, flag in (("partition", "partition"), ("time", "time"), ("account", "account"), ("qos", "qos"),
                      ("gpus_per_node", "gpus-per-node"), ("cpus_per_task", "cpus-per-task")):
        if slurm[key]:
            options.append(f"--{flag}={slurm[key]}")
    if slurm["signal_s"]:  # near the time limit, the run's process (the batch step) checkpoints and stops
        # (USR1 with requeue: its batch step then tells it from a stop asked for, and requeues the job)
        options.append(f"--signal=B:{'USR1' if slurm['requeue'] else 'TERM'}@{slurm['signal_s']}")
    options.append("--requeue" if slurm["requeue"] else "--no-requeue")
    return options


def signal(job_id: str, signame: str, batch: bool = True) -> None:
    """Send a signal to the job's batch step: the run's own process (its stop handler for TERM); not
    `batch`: to its steps (a run across nodes: the task on every node)."""
    _checked(_call(["scancel", f"--signal={signame}", *(["--batch"] if batch else []), job_id]))
    slurm_jobs.SCHEDULER.forget()


def cancel(job_id: str) -> None:
    """End the whole job on every node (its processes get SIGKILL after the cluster's KillWait); a
    pending job leaves the queue."""
    _checked(_call(["scancel", job_id]))
    slurm_jobs.SCHEDULER.forget()


#: What scancel says of a job that has already ended (nothing left to do: not a failure).
ALREADY_ENDED = ("already completing or completed", "Invalid job id")


def _checked(done: subprocess.CompletedProcess[str]) -> None:
    """SlurmError (scancel's own line) unless scancel did what it was asked or the job had ended."""
    if done.returncode != 0 and not any(words in done.stderr for words in ALREADY_ENDED):
        raise SlurmError(f"slurm: scancel failed: {_last_words(done)}")


def check_reachable() -> None:
    """SlurmError, one line, unless Slurm's controller answers now: a stop or kill is never done, nor
    recorded, on a guess."""
    down = slurm_jobs.controller_refuses()
    done = None if down else _call(["squeue", "-h", "--me", "-o", "%i"], timeout=15)
    if done is None or done.returncode != 0:
        words = "connection refused" if done is None else _last_words(done).removeprefix("squeue: error: ")
        raise SlurmError(f"slurm: the controller does not answer ({words}): nothing was done; try again "
                         "once it does")


def wait_ended(info: dict[str, Any], timeout: float) -> bool:
    """Until Slurm says the job has ended (neither pending nor running); whether it has."""
    deadline = time.monotonic() + timeout
    while True:
        slurm_jobs.SCHEDULER.forget()
        job = slurm_jobs.job(info)
        if job is None or not (job.pending or job.running):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.3)


def _call(argv: list[str], cwd: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=cwd,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SlurmError(f"slurm: {argv[0]} failed: {e}") from e


def _last_words(done: subprocess.CompletedProcess[str]) -> str:
    """Slurm's own message: the last error line sbatch printed (`Invalid partition name specified`)."""
    lines = [line.strip() for line in done.stderr.splitlines()
             if line.strip() and not line.startswith("Try \"sbatch --help\"")]
    failures = [line for line in lines if line.startswith("allocation failure: ")]
    if failures:  # --test-only's verdict (`allocation failure: Requested node configuration is ...`)
        return failures[-1].removeprefix("allocation failure: ")
    errors = [line for line in lines if "error" in line.lower()] or lines
    last = errors[-1].removeprefix("sbatch: error: ").removeprefix("sbatch: ") if errors else ""
    return last or f"exit code {done.returncode}"
