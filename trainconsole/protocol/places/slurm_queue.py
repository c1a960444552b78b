"""What Slurm's controller says of this user's jobs (stdlib only): one `squeue` for every run, asked at most
every `poll_s()` seconds and kept (also on disk, for the next `ls`); `sacct` for a job squeue has forgotten,
where accounting answers; a controller that does not answer said so (`unreachable_since`), never taken for
jobs that ended. `slurm.py` (the place) makes of it what a run's status needs.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from . import slurm_end
from .slurm_end import Ending

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
    partition: str = ""
    time_limit: str = ""
    time_left: str = ""
    #: What accounting says of the ended job (None: squeue's view, or no accounting).
    ending: Ending | None = None

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


#: How long squeue may take (a controller that answers does so in well under a second); once it did not
#: answer, it is asked again only every `RETRY_S`, and only if its port takes a connection, so that
#: readers stay fast (the last answer kept, on disk too, for every reader of the home).
SQUEUE_TIMEOUT_S = 5.0
RETRY_S = 10.0
SQUEUE_FORMAT = "%i|%T|%r|%N|%P|%l|%L"


class Scheduler:
    """The scheduler's view of this user's jobs, asked once per `poll_s()` for every run; the last answer
    is kept (also on disk, for the next `ls`), and a controller that does not answer is said to be so
    (`unreachable_since`), never taken for jobs that ended."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: dict[str, Job] = {}
        self._at = -1e9
        self._accounting: bool | None = None  # unknown until sacct is first needed
        self._missed: dict[str, float] = {}  # jobs sacct did not know either, and when it was asked
        #: Since when squeue has not answered (None: it answered last time).
        self.unreachable_since: float | None = None
        self._loaded = False

    def job(self, job_id: str, since: float = 0.0) -> Job | None:
        """The job, from a view no older than `poll_s()` nor than `since` (a submission's time: a view
        from before it cannot know the job); None if Slurm knows no such job (or cannot be asked)."""
        with self._lock:
            if not self._loaded:  # another reader's last answer (so that `ls` need not wait for Slurm)
                self._loaded = True
                self._load()
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

    def asked_after(self, t: float) -> bool:
        """Whether the view was Slurm's answer at a time after `t`."""
        return not self.unreachable and self._at > t

    @property
    def unreachable(self) -> bool:
        """Whether the controller did not answer the last ask (its jobs are then as last known)."""
        return self.unreachable_since is not None

    def _refresh(self) -> None:
        down = self.unreachable
        # (probed only once it did not answer: a healthy controller is never sent an empty connection)
        out = None if down and controller_refuses() else \
            _client("squeue", "-h", "--me", "--states=all", "-o", SQUEUE_FORMAT, timeout=SQUEUE_TIMEOUT_S)
        self._at = time.time()
        if out is None:  # keep the last view: a controller down must not make every run lost
            self.unreachable_since = self.unreachable_since or self._at
            self._at += RETRY_S - poll_s()  # and ask it again only every RETRY_S
        else:
            self.unreachable_since = None
            self._jobs = dict(_parse_squeue(out))
        self._save()

    def _from_sacct(self, job_id: str) -> Job | None:
        answered, ending = slurm_end.sacct(job_id)
        self._accounting = answered
        if ending is None:
            return None
        job = Job(job_id, ending.state, ending.reason, ending.nodes, time_limit=ending.time_limit,
                  ending=ending if ending.state not in PENDING | RUNNING else None)
        self._jobs[job_id] = job
        return job

    def ending(self, job_id: str) -> slurm_end.Ending | None:
        """What accounting says of the ended job (None: no accounting, or it has not ended)."""
        found = self._jobs.get(job_id)
        if found is not None and found.ending is not None:
            return found.ending
        if self._accounting is False:
            return None
        answered, ending = slurm_end.sacct(job_id)
        self._accounting = answered
        return ending if ending is not None and ending.state not in PENDING | RUNNING else None

    def _load(self) -> None:
        """The last view any reader saved (so that a new `ls` need not wait for a controller that is down)."""
        try:
            saved = json.loads(_view_path().read_text())
            self._jobs = {k: Job(*v) for k, v in saved["jobs"].items()}
            self._at, self.unreachable_since = float(saved["at"]), saved["unreachable_since"]
        except (OSError, ValueError, KeyError, TypeError):
            return

    def _save(self) -> None:
        view = {"at": self._at, "unreachable_since": self.unreachable_since,
                "jobs": {k: [j.job_id, j.state, j.reason, j.nodes, j.partition, j.time_limit, j.time_left]
                         for k, j in self._jobs.items()}}
        path = _view_path()
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            tmp.write_text(json.dumps(view))
            os.replace(tmp, path)
        except OSError:
            return


def _view_path() -> Path:
    """Where the last squeue answer is kept for every reader of this home (per Slurm cluster)."""
    from ..rundir import home

    cluster = re.sub(r"\W", "_", os.environ.get("SLURM_CONF", "default"))
    return home() / f".slurm-view-{cluster[-60:]}.json"


def _parse_squeue(out: str) -> list[tuple[str, Job]]:
    rows = [line.split("|") for line in out.splitlines()]
    return [(parts[0], Job(*parts)) for parts in rows if len(parts) == SQUEUE_FORMAT.count("|") + 1]


def controller_refuses() -> bool:
    """Whether slurmctld's port (from slurm.conf, where readable) refuses a connection right now: a
    controller that is down is known at once, without squeue's own long retries."""
    host, port = _controller_address()
    if not host:
        return False
    try:
        socket.create_connection((host, port), timeout=0.3).close()
    except ConnectionRefusedError:
        return True
    except OSError:
        return False  # unknown: let squeue say
    return False


def _controller_address() -> tuple[str, int]:
    """SlurmctldHost and SlurmctldPort of the cluster's slurm.conf (("", 0) where unreadable)."""
    try:
        text = Path(os.environ.get("SLURM_CONF", "/etc/slurm/slurm.conf")).read_text(errors="replace")
    except OSError:
        return "", 0
    host = re.search(r"^\s*SlurmctldHost\s*=\s*([^\s(]+)", text, re.MULTILINE | re.IGNORECASE)
    port = re.search(r"^\s*SlurmctldPort\s*=\s*(\d+)", text, re.MULTILINE | re.IGNORECASE)
    return (host.group(1) if host else "", int(port.group(1)) if port else 6817)


SCHEDULER = Scheduler()

#: squeue's columns for the jobs that hold a partition's nodes: id, name, user, nodes, time left.
HOLDERS_FORMAT = "%i|%j|%u|%N|%L"


@dataclass(frozen=True)
class Holder:
    """A job running on a partition's nodes, as squeue shows it (whoever's it is)."""

    job_id: str
    name: str
    user: str
    nodes: str
    time_left: str

    def __str__(self) -> str:
        return f"job {self.job_id} {self.name} ({self.user}, {self.nodes}, {self.time_left} left)"


class Holders:
    """The jobs that run on each partition asked about: one bounded `squeue` a partition (SQUEUE_TIMEOUT_S),
    at most every `poll_s()`, its answer kept; none asked while the controller does not answer."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[str, tuple[float, list[Holder]]] = {}

    def of(self, partition: str) -> list[Holder]:
        """The jobs running on `partition`'s nodes (as last known where squeue cannot say now)."""
        with self._lock:
            at, jobs = self._seen.get(partition, (-1e9, []))
            if time.time() - at <= max(poll_s(), 1.0) or SCHEDULER.unreachable:
                return jobs
            out = _client("squeue", "-h", "-t", "RUNNING,COMPLETING", "-p", partition, "-o", HOLDERS_FORMAT,
                          timeout=SQUEUE_TIMEOUT_S)
            jobs = parse_holders(out) if out is not None else jobs
            self._seen[partition] = (time.time(), jobs)
            return jobs


def parse_holders(out: str) -> list[Holder]:
    """squeue's rows (`HOLDERS_FORMAT`) as jobs, in its order."""
    rows = [line.split("|") for line in out.splitlines()]
    return [Holder(*parts) for parts in rows if len(parts) == HOLDERS_FORMAT.count("|") + 1]


HOLDERS = Holders()


def _client(*argv: str, timeout: float = 20) -> str | None:
    """A Slurm client's output; None if it is missing, fails or hangs."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None
