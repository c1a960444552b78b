"""How a Slurm job ended, in Slurm's own words (stdlib only): what accounting (`sacct`) says of it, and
the run's status and cause that follow.

Each of Slurm's end states is told as Slurm tells it: TIMEOUT is a `killed` run whose cause names the time
limit, NODE_FAIL a `failed` one naming the node, CANCELLED a `killed` one naming who cancelled it, FAILED
a `failed` one with the exit code or the signal. Where accounting is on, the job's exit code, signal,
elapsed time and peak memory go into the run's record with it.
"""

from __future__ import annotations

import pwd
import re
import signal
import subprocess
from dataclasses import dataclass

#: What sacct is asked: the allocation's line first, then its steps' (`7`, `7.batch`, `7.0`).
FIELDS = "JobID,State,ExitCode,Elapsed,MaxRSS,NodeList,Reason,Timelimit,Start"
#: Ended states that someone (or something outside the run) ended: the run was `killed`.
KILLED = frozenset({"CANCELLED", "REVOKED", "TIMEOUT", "PREEMPTED", "DEADLINE"})


@dataclass(frozen=True)
class Ending:
    """An ended job as accounting keeps it: its state (`TIMEOUT`; `by` the uid that cancelled it), its
    exit code and signal (the batch step's), elapsed time, peak resident memory of its steps (Slurm's
    `63760K`), nodes, reason and time limit."""

    job_id: str
    state: str
    exit_code: int
    signal: int
    elapsed: str
    max_rss: str
    nodes: str
    reason: str
    time_limit: str
    by: str = ""
    start: str = ""  # when it started (Slurm's `2026-11-28T04:33:02`)
    #: (step id, state) of each step, e.g. ("7.batch", "OUT_OF_MEMORY").
    steps: tuple[tuple[str, str], ...] = ()

    def record(self) -> dict[str, object]:
        """The facts that go into the run's final event and record."""
        return {"slurm_state": self.state, "exit_code": self.exit_code, "signal": self.signal,
                "elapsed": self.elapsed, "max_rss": self.max_rss, "job_id": self.job_id}


def parse_sacct(job_id: str, out: str) -> Ending | None:
    """The job's `Ending` from `sacct -n -P -o FIELDS` lines (None if the job is not among them)."""
    rows = [line.split("|") for line in out.splitlines() if line.count("|") == FIELDS.count(",")]
    head = next((r for r in rows if r[0] == job_id), None)
    if head is None:
        return None
    steps = [r for r in rows if r[0].startswith(job_id + ".")]
    state, _, by = head[1].partition(" by ")
    batch = next((r for r in steps if r[0].endswith(".batch")), head)
    code, _, sig = batch[2].partition(":")
    return Ending(job_id, state or "UNKNOWN", _int(code), _int(sig), head[3], _max_rss(steps), head[5],
                  head[6], head[7], by.strip(), head[8],
                  tuple((r[0], r[1].split()[0]) for r in steps if r[1]))


def _int(text: str) -> int:
    return int(text) if text.strip().isdigit() else 0


def _max_rss(steps: list[list[str]]) -> str:
    """The largest MaxRSS among the steps, as Slurm writes it (`63760K`)."""
    def size(text: str) -> float:
        found = re.fullmatch(r"([\d.]+)([KMGT]?)", text)
        return float(found.group(1)) * 1024 ** "KMGT".find(found.group(2) or "K") if found else -1.0
    best = max((r[4] for r in steps), key=size, default="")
    return best if size(best) >= 0 else ""


def sacct(job_id: str, timeout: float = 5.0) -> tuple[bool, Ending | None]:
    """Ask accounting about the job: (whether sacct answered, the job's `Ending` if it knows the job)."""
    try:
        done = subprocess.run(["sacct", "-n", "-P", "-j", job_id, "-o", FIELDS], capture_output=True,
                              text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return False, None
    if done.returncode != 0:
        return False, None
    return True, parse_sacct(job_id, done.stdout)


def status_of(state: str) -> str:
    """The run's status for a job that ended in `state` without the run's own final event."""
    return "killed" if state in KILLED else "failed"


def nodes_down(nodes: list[str], since: str) -> list[str]:
    """Which of `nodes` accounting saw go down (or fail, or drain) since `since` (its node events)."""
    try:
        done = subprocess.run(["sacctmgr", "-n", "-P", "list", "event", f"nodes={','.join(nodes)}",
                               f"start={since}", "format=NodeName,State"], capture_output=True, text=True,
                              timeout=5, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return []
    rows = [line.split("|") for line in done.stdout.splitlines() if "|" in line]
    return sorted({r[0] for r in rows if r[0] in nodes and r[1].split("+")[0] in ("DOWN", "FAIL", "DRAIN")})


def cause(ending: Ending, failed_nodes: str = "") -> str:
    """The job's end in Slurm's words: "time limit 00:01:00 reached", "node n2 failed", ..."""
    state = ending.state
    if state == "TIMEOUT":
        return f"time limit {ending.time_limit} reached"
    if state == "NODE_FAIL":
        return f"node {failed_nodes or ending.nodes} failed"
    if state == "CANCELLED":
        return f"cancelled by {user(ending.by)} (scancel)" if ending.by else "cancelled (scancel)"
    if state == "OUT_OF_MEMORY":
        step = next((s for s, st in ending.steps if st == "OUT_OF_MEMORY"), ending.job_id)
        return f"out of memory: Slurm killed step {step} (OUT_OF_MEMORY)"
    return WORDS.get(state) or failure(ending)


def failure(ending: Ending) -> str:
    """A FAILED (or otherwise ended) job: its exit code, or the signal that ended its batch step."""
    if ending.signal:
        return f"job {ending.job_id} {ending.state}: the run's process was killed by signal " \
               f"{ending.signal} ({signal_name(ending.signal)})"
    return f"job {ending.job_id} {ending.state} with exit code {ending.exit_code}"


def signal_name(number: int) -> str:
    """`SIGKILL` for 9; the number itself for one this system does not name."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def user(uid: str) -> str:
    """The name of the user with this uid (as `CANCELLED by 0` gives it), else the uid."""
    try:
        return pwd.getpwuid(int(uid)).pw_name
    except (ValueError, KeyError):
        return uid


WORDS = {
    "PREEMPTED": "preempted by Slurm (a job of higher priority took the nodes)",
    "BOOT_FAIL": "a node of the job failed to boot (BOOT_FAIL)",
    "DEADLINE": "the job's deadline passed (DEADLINE)",
    "REVOKED": "the job was revoked (REVOKED: it runs on another cluster of a federation)",
}

HINTS = {
    "TIMEOUT": "resume it with a longer limit (trainconsole resume ID --time ...); slurm.requeue = true "
               "comes back on its own",
    "NODE_FAIL": "resume the run from last.pt (on nodes that work)",
    "OUT_OF_MEMORY": "ask for more memory (--sbatch-arg=--mem=...) or use a smaller batch",
    "PREEMPTED": "resume it, or set slurm.requeue = true",
    "BOOT_FAIL": "resume it; tell the cluster's admins if it happens again",
    "DEADLINE": "resume it with a later --deadline, or none",
    "CANCELLED": "the job was cancelled outside trainconsole",
}
#: A batch step ended by SIGKILL: nothing in the run could say why; the kernel's OOM killer does this.
SIGKILL_HINT = "nothing in the run could say why: the kernel's OOM killer does this (dmesg on its node)"


def hint(ending: Ending) -> str:
    """What the user can do about the job's end."""
    if ending.state not in HINTS and ending.signal == signal.SIGKILL:
        return SIGKILL_HINT
    return HINTS.get(ending.state, f"see slurm-{ending.job_id}.out and stderr.log")
