"""What Slurm says of a run's job, and what that makes of the run (stdlib only).

A run sent to Slurm has `slurm.job_id` in run.json. `job` answers from one `squeue` for all of this
user's jobs (every `poll_s()` seconds at most, however many runs ask; `sacct` for a job squeue has
forgotten, where accounting is on). `alive` is `places.alive` for such a run (`Slurm`, the place):
pending = alive (the run is `queued`); running = its process lives (by pid here, by heartbeat
elsewhere), or is still starting; ended = gone. `settle` writes Slurm's own word (`killed` / `failed`,
with its reason) into the log of a run whose job ended without the run's final event (a time limit, a
node failure, an outside `scancel`, an out-of-memory kill): whoever first sees it, once, so that no such
run stays `lost`.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import time
from pathlib import Path
from typing import Any

from ..events import FINAL, STARTED, Event, tail
from ..kills import record_end
from ..rundir import RunDir
from . import Info, Place, slurm_end
from .host import ended, process_alive_anywhere
from .host import ended as run_ended
from .slurm_end import Ending
from .slurm_queue import (  # noqa: F401 - (the place's readers and control side name them here)
    CANCELLED,
    ENV_POLL,
    HOLDERS,
    OUTPUT,
    PENDING,
    POLL_S,
    RETRY_S,
    RUNNING,
    SCHEDULER,
    SCRIPT,
    SQUEUE_FORMAT,
    SQUEUE_TIMEOUT_S,
    Holder,
    Job,
    Scheduler,
    _client,
    controller_refuses,
    poll_s,
)


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
    """Whether a Slurm run's process lives, from its job; `process_rule(run_path, info)` is the rule for a
    plain process."""
    found = job(info)
    if found is None and SCHEDULER.unreachable:  # as last known: waiting, or its process
        return process_rule(run_path, info) if started_here(info) else True
    if found is None:  # squeue and sacct know nothing: just submitted, or long gone
        if started_here(info):
            return process_rule(run_path, info)
        young = time.time() - float(info["slurm"].get("submitted_at") or 0.0) < 3 * poll_s() + 10
        return None if young else False
    if found.pending:
        if ended(info) and started_here(info) and not stop_asked(info) and found.state != "CONFIGURING" \
                and SCHEDULER.asked_after(info["ended_at"]):  # (a view from before its end says nothing)
            back_in_queue(Path(run_path), found)  # requeued (scontrol requeue, a node's failure)
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
    """Why the run's job waits (Slurm's `Priority`, `Resources`...), while it is pending; while the
    controller does not answer, that (the console's status cell: `queued: Slurm not answering since
    04:12`)."""
    found = job(info)
    since = SCHEDULER.unreachable_since
    if since is not None and (found is None or found.pending):
        return "Slurm not answering since " + time.strftime("%H:%M", time.localtime(since))
    return found.reason if found is not None and found.pending else None


def row_fields(info: dict[str, Any], status: str, events: list[Event]) -> dict[str, Any]:
    """The `slurm` of a run's `ls` row: job id, nodes, and Slurm's reason while queued (or how it ended,
    where Slurm ended it)."""
    slurm = info.get("slurm") or {}
    live = job(info) if status in ("queued", "running", "lost") else None
    nodes = (live.nodes if live and live.running else "") or slurm.get("nodes") or ""  # squeue's, if running
    out = {"job_id": slurm.get("job_id"), "nodes": nodes, "reason": None,
           "partition": live.partition if live else slurm.get("partition", ""),
           "time_limit": live.time_limit if live else slurm.get("time", ""),
           "time_left": live.time_left if live and live.running else "",
           "unreachable_since": SCHEDULER.unreachable_since}
    if status == "queued":
        out["reason"] = reason(info) or "starting"  # (Slurm says "None" until it first schedules)
    requeued = (slurm.get("requeued_at") or 0) >= (info.get("started_at") or 0) > 0 or run_ended(info)
    if status == "queued" and requeued:  # (ended: waiting again, before `back_in_queue` took it)
        out["reason"] = f"requeued ({live.reason if live and live.reason != 'None' else 'BeginTime'})"
    ended = next((e for e in reversed(events) if e.get("type") in FINAL), None)
    if status in ("queued", "running"):  # (a `stopped` Slurm has yet to explain says nothing yet)
        return out
    if ended is not None and ended.get("slurm_state"):
        out["reason"] = f"{ended['slurm_state']}: {ended.get('cause')}"
    elif status == "lost" and live is None and not SCHEDULER.unreachable:
        out["reason"] = f"unknown: Slurm no longer knows job {slurm.get('job_id')} (no accounting to ask)"
    elif ended is not None and ended.get("type") == "stopped" and time_limit_stop(info):
        out["reason"] = "time limit near"
    return out


def back_in_queue(path: Path, found: Job) -> None:
    """A job Slurm put back in the queue after its run ended (`stopped` by Slurm's TERM): the run waits
    again (`queued: requeued`) until the job's next start records it, never `stopped` meanwhile. Taken
    only when the run's lifecycle lock is free, as `settle`."""
    fd = os.open(path / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        run = RunDir(path)
        info = run.read_info()
        if job_of(info) == found.job_id and ended(info) and not stop_asked(info):
            now = time.time()
            run.write_info({**info, "queued": True, "dequeued_at": None, "started_at": now, "pid": None,
                            "pid_started": None, "ended_at": None,
                            "slurm": {**info["slurm"], "requeued_at": now}})
    except OSError:
        return  # a lifecycle action holds the run: it says the last word
    finally:
        os.close(fd)


def time_limit_stop(info: dict[str, Any]) -> bool:
    """Whether the run's `stopped` came from Slurm's signal before its time limit (`--signal`), not from
    a stop of ours."""
    from ..slurm_config import time_limit_s

    slurm = info.get("slurm") or {}
    limit, signal_s = time_limit_s(slurm.get("time") or ""), slurm.get("signal_s") or 0
    ran = (info.get("ended_at") or 0.0) - (info.get("started_at") or 0.0)
    # Slurm sends the signal up to a minute before it was asked to
    return bool(limit and signal_s) and not stop_asked(info) and ran >= limit - signal_s - 60 - 5


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

    try:
        info = json.loads((path / "run.json").read_text())
    except (OSError, ValueError):
        return None
    events = tail(path / "events.jsonl")
    if job_of(info) != found.job_id:
        return None
    if ended_since(events, info.get("started_at") or 0.0) and not cancelled_stop(events, info, found):
        return None
    ending = found.ending or SCHEDULER.ending(found.job_id)
    status = slurm_end.status_of(found.state)
    said = slurm_said(path, found.job_id)
    facts = {"slurm_state": found.state, "slurm_reason": found.reason, "job_id": found.job_id,
             **({"slurm_said": said} if said else {})}
    if ending is not None:  # accounting's record: exit code, signal, elapsed, peak memory
        cause, hint = slurm_end.cause(ending, _failed_nodes(ending)), slurm_end.hint(ending)
        facts |= ending.record()
    else:
        cause, hint = _squeue_words(found, said)
    record_end(RunDir(path), status, cause=cause, hint=hint, **facts)
    return status


def _squeue_words(found: Job, said: str | None) -> tuple[str, str]:
    """How the job ended from squeue alone (no accounting: no exit code or signal to tell)."""
    ending = Ending(found.job_id, found.state, 0, 0, "", "", found.nodes, found.reason, found.time_limit)
    if found.state in slurm_end.WORDS or found.state in slurm_end.HINTS:
        return slurm_end.cause(ending, _failed_nodes(ending)), slurm_end.hint(ending)
    return said or f"Slurm job {found.job_id} ended {found.state} (reason {found.reason})", \
        slurm_end.hint(ending)


def _failed_nodes(ending: Ending) -> str:
    """Which of a NODE_FAIL job's nodes Slurm now says are down (its whole node list where unknown)."""
    if ending.state != "NODE_FAIL":
        return ""
    mine = (_client("scontrol", "show", "hostnames", ending.nodes, timeout=5) or "").split()
    if mine and ending.start and ending.start != "Unknown":  # accounting's node events
        failed = slurm_end.nodes_down(mine, ending.start)
    else:  # (a node may be back already: Slurm's ReturnToService)
        down = _client("sinfo", "-h", "-N", "-t", "down,fail,drain", "-o", "%N", timeout=5)
        failed = sorted(set((down or "").split()) & set(mine))
    return ",".join(failed) or ending.nodes


def held_status(info: dict[str, Any], final: str) -> str:
    """The status of a run whose last final event is `final` (`Slurm.final_status`)."""
    if final != "stopped" or stop_asked(info) or not (not ended(info) or ending(info)):
        return final
    found = job(info)
    if found is None or SCHEDULER.unreachable:
        return final
    if found.running or found.pending:
        return "running" if found.running else "queued"
    # ended: Slurm's word (its cause comes with `settle`), as `cancelled_stop` takes it
    return final if found.state in ("COMPLETED", "FAILED") else slurm_end.status_of(found.state)


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
    if found.state in ("COMPLETED", "FAILED") or stop_asked(info):
        return False  # (Slurm's TERM at a time limit, a node's failure, a preemption: its word, too)
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

STARS = re.compile(r"\*\*\* (JOB|STEP) .*\*\*\*|Detected \d+ oom.kill events? in \S+")


def slurm_said(run_path: Path, job_id: str) -> str | None:
    """Slurm's own last word on the job in its output file (`*** JOB 7 ON n1 CANCELLED AT ... ***`)."""
    try:
        text = (run_path / OUTPUT.format(job_id=job_id)).read_text(errors="replace")[-20000:]
    except OSError:
        return None
    found = [m.group(0) for m in STARS.finditer(text)]
    return found[-1].strip("* ").strip() if found else None


class Slurm(Place):
    """A run sent to Slurm (run.json `slurm`): its job says whether it waits, runs or ended, and how."""

    name = "slurm"
    info_key = "slurm"
    section = "slurm"
    late_word_s = ENDING_S

    def takes(self, config: Info) -> bool:
        """A config whose [slurm] section submits it."""
        from ..slurm_config import submitted

        return submitted(config)

    def check_section(self, values: Any) -> dict[str, Any]:
        """`[slurm]`, checked (`slurm_config`)."""
        from ..slurm_config import validate_slurm

        return validate_slurm(values)

    def check_config(self, config: Info, search: bool) -> bool:
        """[slurm] with the strategy; a submitted run's devices are its nodes'."""
        from ..slurm_config import check_with_strategy, submitted

        check_with_strategy(config, search)
        return not submitted(config)

    def alive(self, run_path: str | os.PathLike[str], info: Info, now: float | None = None) -> bool | None:
        """By its job while the job has a say (None while just submitted), else as a plain process."""
        if self.watched(info):
            return alive(run_path, info, process_alive_anywhere)
        return process_alive_anywhere(run_path, info, now)

    def watched(self, info: Info) -> bool:
        """While its job still has a say: not ended, or ended a moment ago without a stop of ours (an
        outside `scancel` looks like a stop to the run)."""
        return not ended(info) or ending(info)

    def settle(self, run_path: str | os.PathLike[str], info: Info) -> str | None:
        """Slurm's word on how its job ended, if the run could not say it."""
        return settle(run_path, info)

    def final_status(self, info: Info, final: str) -> str:
        """A `stopped` that no stop of ours asked for is Slurm's TERM (an outside `scancel` or requeue, the
        time limit, a node's failure): `running` while its job still runs, `queued` once it waits again,
        until Slurm's word on the ended job (`settle`) says how it ended; never a false `stopped`."""
        return held_status(info, final)

    def reason(self, info: Info) -> str:
        """Slurm's reason while the job waits (`Resources`, `Priority`...; not its `None`)."""
        if ended(info):
            return ""
        said = reason(info)
        return "" if said in (None, "None") else said

    def row_fields(self, info: Info, status: str, events: list[Event]) -> dict[str, Any] | None:
        """Its job, nodes and Slurm's reason."""
        return row_fields(info, status, events)

    def waits_for(self, info: Info) -> list[str]:
        """While its job waits: the jobs running on its partition's nodes (`holders`)."""
        return [str(h) for h in holders(info)]


def holders(info: dict[str, Any]) -> list[Holder]:
    """The jobs (anyone's) that hold the nodes of the partition the run's job waits for, as squeue shows
    them; [] unless its job is pending (one bounded squeue a partition, kept for every run: `HOLDERS`)."""
    found = job(info)
    if found is None or not found.pending or not found.partition:
        return []
    return [h for h in HOLDERS.of(found.partition) if h.job_id != found.job_id]


PLACE = Slurm()
