"""The run lifecycle for a run whose place is a Slurm job: submit (launch, resume), stop, kill.

`runs.py` comes here for a run with `[slurm]` in its config (run.json then holds `slurm.job_id`). The
run's process is the job's batch step on its first node (`trainers/slurm_job.py` records it in run.json
when it starts); its status joins what Slurm says of the job with its process and heartbeat
(`protocol.slurm_jobs`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from trainconsole.protocol import Config, EventWriter, RunDir, load, processes, run_requests
from trainconsole.protocol.kills import record_kill
from trainconsole.protocol.places import host as hosts
from trainconsole.protocol.places import slurm as slurm_jobs

from . import Kill, Place, Status
from . import sbatch as slurm

#: How long a kill waits for Slurm to say the job has ended (its KillWait and a controller's round trip).
KILL_WAIT_S = 30.0


def submit(run: RunDir, info: dict[str, Any], command: list[str], section: dict[str, Any],
           ran_s: float) -> None:
    """Submit the run's job (the caller holds the run's lock) and record it: the run is `queued` until
    its process starts on the allocation. SlurmError (Slurm's words) if sbatch refuses."""
    job_id = slurm.submit(run, info, command, section)
    now = time.time()
    info = {k: v for k, v in info.items() if k != "status"}
    run.write_info({**info, "host": hosts.this_host(), "queued": True, "pid": None, "pgid": None,
                    "pid_started": None, "started_at": now, "ended_at": None, "dequeued_at": None,
                    "ran_s": ran_s, "slurm": {"job_id": job_id, "submitted_at": now, "nodes": "",
                                              "requeue": section["requeue"], "nodes_asked": section["nodes"],
                                              "partition": section["partition"], "time": section["time"],
                                              "signal_s": section["signal_s"]}})
    EventWriter(run.events, run.id).emit("queued", slurm_job=job_id, partition=section["partition"] or
                                         "(default)", nodes=section["nodes"])


def with_options(run: RunDir, sets: list[str]) -> Config:
    """The run's config with new `[slurm]` options (`resume ID --time 2:00:00`), checked as at submit
    (ConfigError names the key); the caller records it in config.toml before the job is resubmitted."""
    from trainconsole.protocol import ConfigError

    if "slurm" not in run.read_info():
        raise ConfigError("slurm", f"run {run.id} is not a Slurm run: no Slurm options to change on resume")
    return load(run.config, sets)


def stop(run: RunDir, status: Callable[[RunDir], str], grace: float) -> str:
    """A pending job leaves the queue (`stopped`); a running one's process gets SIGTERM through Slurm
    (checkpoint, `stopped`), and the whole job is killed if it outlives `grace` seconds."""
    with run.lock():
        info = run.read_info()
        if status(run) in ("running", "queued"):
            slurm.check_reachable()  # SlurmError: nothing done, nothing recorded
            slurm_jobs.SCHEDULER.forget()
        job = slurm_jobs.job(info)
        if status(run) not in ("running", "queued") or job is None:
            return status(run)
        # ours: a run that ends `stopped` from now on was stopped, not cancelled (slurm_jobs.stop_asked)
        run.update_info(slurm={**info["slurm"], "stop_asked_at": time.time()})
        if job.pending or not slurm_jobs.started_here(info):
            slurm.cancel(slurm_jobs.job_of(info) or "")
            EventWriter(run.events, run.id).emit("stopped", queued=True, slurm_job=job.job_id)
            run.update_info(ended_at=time.time())
            return status(run)
        # one node, or a search (its driver is the batch step; its Ray's nodes end with the job): the batch
        # step; a ddp run across nodes: every node's task
        alone = (info["slurm"].get("nodes_asked") or 1) == 1 or info.get("kind") == "tune"
        slurm.signal(job.job_id, "TERM", batch=alone)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and status(run) in ("running", "queued"):
        time.sleep(0.2)
    if status(run) in ("running", "queued"):
        kill(run, status)
    return status(run)


def kill(run: RunDir, status: Callable[[RunDir], str]) -> list[int]:
    """End the whole job (every process on every node; a pending job leaves the queue) and record
    `killed`. Returns the pids of the run's process tree here that outlived it (none, normally)."""
    with run.lock():
        info = run.read_info()
        was = status(run)
        job_id = slurm_jobs.job_of(info)
        if was not in ("running", "queued", "lost") or job_id is None:
            return []
        slurm.check_reachable()  # SlurmError: nothing killed, nothing recorded
        survivors = _kill_tree(run, info)
        slurm.cancel(job_id)
        slurm.wait_ended(info, KILL_WAIT_S)
        if not slurm_jobs.ended_since(_events(run), info.get("started_at") or 0.0):
            record_kill(run, [info["pid"]] if info.get("pid") else [], slurm_job=job_id)
    return [p.pid for p in survivors]


def _kill_tree(run: RunDir, info: dict[str, Any]) -> list[Any]:
    """SIGKILL the run's process tree first, so that it cannot take Slurm's TERM for a stop: here
    directly, on another node by a kill request its watchdog obeys (`run_requests`)."""
    if not info.get("pid"):
        return []  # pending, or not started yet: scancel alone ends it
    if hosts.remote(info):
        run_requests.request(run.path, run_requests.KILL, info, hosts.this_host())
        return []
    leader = processes.find(info.get("pid"), info.get("pid_started"))
    if leader is None:
        return []
    return processes.end_family(leader, info.get("pgid"), info.get("pid_started") or 0.0).survivors


def _events(run: RunDir) -> list[Any]:
    from trainconsole.protocol import tail

    return tail(run.events)


class Slurm(slurm_jobs.Slurm, Place):
    """A run as a Slurm job: submitted with sbatch, stopped and killed through Slurm."""

    def start(self, run: RunDir, info: dict[str, Any], command: list[str], config: Config | None,
              ran_s: float) -> None:
        """Submit its job (the run is `queued` until its process starts on the allocation)."""
        config = config if config is not None else load(run.config)
        submit(run, info, command, config["slurm"], ran_s)

    def stop(self, run: RunDir, status: Status, grace: float) -> str:
        """Out of the queue, or SIGTERM through Slurm; the whole job killed after `grace` seconds."""
        return stop(run, status, grace)

    def kill(self, run: RunDir, status: Status) -> Kill:
        """The whole job ended, on every node."""
        return self.ended_by(run, status, lambda: kill(run, status))


PLACE = Slurm()
