"""What Slurm says of a run's job, and what that makes of the run (stdlib only).

A run sent to Slurm has `slurm.job_id` in run.json. `job` answers from one `squeue` for all of this
user's jobs (every `poll_s()` seconds at most, however many runs ask; `sacct` for a job squeue has
forgotten, where accounting is on). `alive` is `hosts.alive` for such a run: pending = alive (the run is
`queued`); running = its process lives (by pid here, by heartbeat elsewhere), or is still starting; ended
= gone. `settle` writes Slurm's own word (`killed` / `failed`, with its reason) into the log of a run
whose job ended without the run's final event (a time limit, a node failure, an outside `scancel`, an
out-of-memory kill): whoever first sees it, once, so that no such run stays `lost`.
"""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..events import FINAL, STARTED, Event, EventWriter, tail

#: How often the scheduler is asked at most (one squeue for every run); the env var changes it.
ENV_POLL = "TRAINCONSOLE_SLURM_POLL_S"
POLL_S = 3.0
PENDING = frozenset({"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD"})
RUNNING = frozenset({"RUNNING", "COMPLETING", "SUSPENDED", "STOPPED", "SIGNALING", "STAGE_OUT", "RESIZING"})
#: Ended states that mean someone ended the job (the rest are failures).
CANCELLED = frozenset({"CANCELLED", "REVOKED"})
#: Where Slurm writes its own messages about the job ("*** JOB 7 ON n1 CANCELLED AT ... ***").
OUTPUT = "slurm-{job_id}.out"
SCRIPT = "slurm.sh"


@dataclass(frozen=True)
class Job:
    """One job as the scheduler sees it: its state (`PENDING`, `RUNNING`, `TIMEOUT`...), its reason
    (`Priority`, `Resources`, `None`...) and its nodes (Slurm's node list, e.g. `n[1-2]`)."""

    job_id: str
    state: str
    reason: str
    nodes: str

    @property
    def pending(self) -> bool:
        """Waiting for its allocation."""
        return self.state in PENDING

    @property
    def running(self) -> bool:
        """Holding its allocation."""
        return self.state in RUNNING


def poll_s() -> float:
    """Seconds between two asks of the scheduler (`TRAINCONSOLE_SLURM_POLL_S`, default 3)."""
    try:
        return max(0.0, float(os.environ.get(ENV_POLL, POLL_S)))
    except ValueError:
        return POLL_S


class Scheduler:
    """The scheduler's view of this user's jobs, asked once per `poll_s()` for every run."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: dict[str, Job] = {}
        self._at = -1e9
        self._accounting: bool | None = None  # unknown until sacct is first needed
        self._missed: dict[str, float] = {}  # jobs sacct did not know either, and when it was asked

    def job(self, job_id: str, since: float = 0.0) -> Job | None:
        """The job, from a view no older than `poll_s()` nor than `since` (a submission's time: a view
        from before it cannot know the job); None if Slurm knows no such job (or cannot be asked)."""
        with self._lock:
            if time.time() - self._at > poll_s() or self._at < since:
                self._refresh()
            found = self._jobs.get(job_id)
            if found is None and self._accounting is not False \
                    and time.time() - self._missed.get(job_id, -1e9) > poll_s():
                found = self._from_sacct(job_id)
                if found is None:
                    self._missed[job_id] = time.time()
            return found

    def forget(self) -> None:
        """Drop the view: the next ask goes to Slurm (after an action that changed a job)."""
        with self._lock:
            self._at = -1e9

    def _refresh(self) -> None:
        out = _client("squeue", "-h", "--me", "--states=all", "-o", "%i|%T|%r|%N")
        self._at = time.time()
        if out is None:
            return  # keep the last view: a slow controller must not make every run lost
        self._jobs = {}
        for line in out.splitlines():
            parts = line.split("|")
            if len(parts) == 4:
                self._jobs[parts[0]] = Job(*parts)

    def _from_sacct(self, job_id: str) -> Job | None:
        out = _client("sacct", "-n", "-P", "-X", "-j", job_id, "-o", "JobID,State,Reason,NodeList")
        self._accounting = out is not None
        for line in (out or "").splitlines():
            parts = line.split("|")
            if len(parts) == 4 and parts[0] == job_id:
                state = parts[1].split()[0] if parts[1] else "UNKNOWN"  # "CANCELLED by 0"
                job = Job(job_id, state, parts[2], parts[3])
                self._jobs[job_id] = job
                return job
        return None


SCHEDULER = Scheduler()


def _client(*argv: str) -> str | None:
    """A Slurm client's output; None if it is missing, fails or hangs."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def job_of(info: dict[str, Any]) -> str | None:
    """The run's current job id (run.json `slurm.job_id`), or None for a run not sent to Slurm."""
    slurm = info.get("slurm")
    job_id = slurm.get("job_id") if isinstance(slurm, dict) else None
    return str(job_id) if job_id else None


def job(info: dict[str, Any]) -> Job | None:
    """What the scheduler says of the run's current job (None: not a Slurm run, or unknown to Slurm)."""
    job_id = job_of(info)
    if job_id is None:
        return None
    return SCHEDULER.job(job_id, since=float(info["slurm"].get("submitted_at") or 0.0))


def started_here(info: dict[str, Any]) -> bool:
    """Whether the job's run process has recorded itself (after the job's submission)."""
    return bool(info.get("pid")) and (info.get("dequeued_at") or 0.0) >= (info["slurm"].get("submitted_at")
                                                                          or 0.0)


def alive(run_path: str | os.PathLike[str], info: dict[str, Any], process_rule: Any) -> bool | None:
    """`hosts.alive` for a Slurm run; `process_rule(run_path, info)` is the rule for a plain process."""
    found = job(info)
    if found is None:  # squeue and sacct know nothing: just submitted, or long gone
        if started_here(info):
            return process_rule(run_path, info)
        young = time.time() - float(info["slurm"].get("submitted_at") or 0.0) < 3 * poll_s() + 10
        return None if young else False
    if found.pending:
        return True
    if not started_here(info):
        if found.running or requeuing(info):
            return True  # its process is starting on the allocation, or its job going back to the queue
        settle(run_path, info)
        return False
    living = process_rule(run_path, info)
    if found.running:
        return living
    # the job has ended: believe a process here (it may be writing its last event), not a heartbeat
    if living and info.get("host") == os.uname().nodename:
        return True
    settle(run_path, info)  # its end, in Slurm's words, if the run could not say it
    return False


#: How long after its batch step asked for a requeue a job may still look ended (Slurm shows it FAILED
#: or COMPLETED while it goes back to the queue).
REQUEUE_GRACE_S = 60.0


def requeuing(info: dict[str, Any]) -> bool:
    """Whether the run's job was just requeued by its batch step (`slurm.requeued_at`)."""
    at = (info.get("slurm") or {}).get("requeued_at")
    return isinstance(at, (int, float)) and time.time() - at < REQUEUE_GRACE_S


def reason(info: dict[str, Any]) -> str | None:
    """Why the run's job waits (Slurm's `Priority`, `Resources`...), while it is pending."""
    found = job(info)
    return found.reason if found is not None and found.pending else None


def row_fields(info: dict[str, Any], status: str, events: list[Event]) -> dict[str, Any]:
    """The `slurm` of a run's `ls` row: job id, nodes, and Slurm's reason while queued (or how it ended,
    where Slurm ended it)."""
    slurm = info.get("slurm") or {}
    out = {"job_id": slurm.get("job_id"), "nodes": slurm.get("nodes") or "", "reason": None}
    if status == "queued":
        out["reason"] = reason(info) or "starting"  # (Slurm says "None" until it first schedules)
    ended = next((e for e in reversed(events) if e.get("type") in FINAL), None)
    if ended is not None and ended.get("slurm_state"):
        out["reason"] = f"{ended['slurm_state']}: {ended.get('cause')}"
    return out


def settle(run_path: str | os.PathLike[str], info: dict[str, Any]) -> str | None:
    """Write Slurm's word on a job that ended without the run's final event; the status written.

    Taken only when the run's lifecycle lock is free (a kill holding it writes its own `killed`), and
    only once: the final event it writes, and `ended_at`, end the run for every reader."""
    found = job(info)
    if found is None or found.pending or found.running or requeuing(info):
        return None
    path = Path(run_path)
    fd = os.open(path / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return None  # a lifecycle action holds the run: it says the last word
        return _settle_locked(path, found)
    finally:
        os.close(fd)


def _settle_locked(path: Path, found: Job) -> str | None:
    import json

    try:
        info = json.loads((path / "run.json").read_text())
    except (OSError, ValueError):
        return None
    events = tail(path / "events.jsonl")
    if job_of(info) != found.job_id:
        return None
    if ended_since(events, info.get("started_at") or 0.0) and not cancelled_stop(events, info, found):
        return None
    status = "killed" if found.state in CANCELLED else "failed"
    said = slurm_said(path, found.job_id)
    cause = said or f"Slurm job {found.job_id} ended {found.state} (reason {found.reason})"
    EventWriter(path / "events.jsonl", path.name).emit(
        status, cause=cause, hint=HINTS.get(found.state, "see " + OUTPUT.format(job_id=found.job_id)),
        slurm_state=found.state, slurm_reason=found.reason, job_id=found.job_id)
    info["ended_at"] = time.time()
    tmp = path / f".run.json.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(info, indent=2))
    os.replace(tmp, path / "run.json")
    return status


def stop_asked(info: dict[str, Any]) -> bool:
    """Whether trainconsole asked the run's current launch to stop (`slurm.stop_asked_at`, written by
    the console's stop before it signals the job)."""
    asked = (info.get("slurm") or {}).get("stop_asked_at")
    return isinstance(asked, (int, float)) and asked >= (info.get("started_at") or 0.0)


#: How long after its end a Slurm run's job is still asked how it ended (squeue keeps an ended job
#: for the cluster's MinJobAge, 300 s by default).
ENDING_S = 60.0


def ending(info: dict[str, Any]) -> bool:
    """Whether the run ended a moment ago without a stop of ours: its job may yet say it was cancelled."""
    end = info.get("ended_at")
    return isinstance(end, (int, float)) and time.time() - end < ENDING_S and not stop_asked(info)


def cancelled_stop(events: list[Event], info: dict[str, Any], found: Job) -> bool:
    """Whether the run's `stopped` is an outside `scancel`: Slurm sends SIGTERM first (KillWait before
    its SIGKILL), which a training run takes as a stop and ends `stopped`; its job says CANCELLED, and
    no stop of ours was asked. Such a run was killed, in Slurm's words."""
    if found.state not in CANCELLED or stop_asked(info):
        return False
    last = next((e for e in reversed(events) if e.get("type") in FINAL), None)
    return last is not None and last.get("type") == "stopped"


def ended_since(events: list[Event], started_at: float) -> bool:
    """Whether the log holds a final event (after its last `started`) no older than `started_at`."""
    for event in reversed(events):
        if event.get("type") in FINAL:
            t = event.get("t")
            return isinstance(t, (int, float)) and t >= started_at - 0.01
        if event.get("type") == STARTED:
            return False
    return False


HINTS = {
    "TIMEOUT": "the job reached its time limit: resume it, or set slurm.time longer (slurm.requeue = true "
               "comes back on its own)",
    "NODE_FAIL": "a node of the job failed: resume the run from last.pt",
    "OUT_OF_MEMORY": "the job was killed for memory: ask for more (--sbatch-arg=--mem=...) or use a "
                     "smaller batch",
    "PREEMPTED": "the job was preempted: resume it, or set slurm.requeue = true",
    "CANCELLED": "the job was cancelled (scancel) outside trainconsole",
}

STARS = re.compile(r"\*\*\* (JOB|STEP) .*\*\*\*")


def slurm_said(run_path: Path, job_id: str) -> str | None:
    """Slurm's own last word on the job in its output file (`*** JOB 7 ON n1 CANCELLED AT ... ***`)."""
    try:
        text = (run_path / OUTPUT.format(job_id=job_id)).read_text(errors="replace")[-20000:]
    except OSError:
        return None
    found = [m.group(0) for m in STARS.finditer(text)]
    return found[-1].strip("* ").strip() if found else None
