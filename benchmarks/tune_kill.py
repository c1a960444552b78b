"""A killed search under load: how many of its processes still live 3 s after `trainconsole kill` began.

BUSY busy-loop processes (nice 0) load the machine; then, CYCLES times for each moment, a small real
search (12 trials of 2 epochs, two at a time, each in a worker process of its own that the raylet
starts: SETS) is launched through the CLI in a scratch home and killed:
- early: a random 0.3-8 s after the launch, while Ray starts (gcs_server, raylet, the first workers);
- mid-trial: a random 0-4 s after the first trial reported an epoch (trials and their workers come
  and go).
The kill is the console's (`control.runs.kill`, in this process; `--cli`: `trainconsole kill`, whose
start-up then counts too). Every process of the run's session (the run starts as a session leader; Ray's
processes stay in it) is tracked from the launch on: the ones still live 3 s after the kill began are
survivors, and the time from the kill's start until none is left is given.
Survivors are then SIGKILLed by the script, so that one cycle's leftovers never load the next.

    .venv/bin/python benchmarks/tune_kill.py [--busy 8] [--cycles 6] [--moments early,mid] [--cli]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil
from tune_common import DEMO, EXE, REPO, machine

from trainconsole.control import runs

SETS = ["tune.num_samples=12", "tune.max_t=2", "tune.scheduler='none'", "tune.reuse_actors=false",
        "tune.max_concurrent=2"]
BOUND_S = 3.0


def busy(count: int) -> list[subprocess.Popen[bytes]]:
    """`count` processes spinning a CPU each, at nice 0."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


class Tracker(threading.Thread):
    """Every process of a session seen since the tracker started: pid -> (create time, name)."""

    def __init__(self, sid: int) -> None:
        super().__init__(daemon=True)
        self.sid, self.seen, self.halt = sid, {}, threading.Event()

    def run(self) -> None:
        """Poll the process table until halted."""
        while not self.halt.is_set():
            for proc in psutil.process_iter(["create_time", "name"]):
                try:
                    if proc.pid not in self.seen and os.getsid(proc.pid) == self.sid:
                        self.seen[proc.pid] = (proc.info["create_time"], proc.info["name"])
                except OSError:
                    continue
            time.sleep(0.05)


def alive(seen: dict[int, tuple[float, str]]) -> list[psutil.Process]:
    """The tracked processes still running (same pid and start time, not a zombie)."""
    left = []
    for pid, (created, _) in seen.items():
        try:
            proc = psutil.Process(pid)
            if abs(proc.create_time() - created) < 0.05 and proc.status() != psutil.STATUS_ZOMBIE:
                left.append(proc)
        except psutil.Error:
            continue
    return left


def first_epoch(events: Path) -> bool:
    """True once some trial has reported an epoch."""
    try:
        lines = events.read_text().splitlines()
    except OSError:
        return False
    return any(e.get("type") == "trial" and e.get("iteration", 0) >= 1 for e in map(json.loads, lines))


def cycle(moment: str, home: str, cli: bool) -> tuple[int, int, list[str], float, float]:
    """Launch a search, kill it at `moment`; (processes seen, survivors 3 s after the kill began, their
    names, seconds the kill took, seconds until no process of the session was left)."""
    env = {**os.environ, "TRAINCONSOLE_HOME": home}
    out = subprocess.run([EXE, "tune", DEMO, *[a for s in SETS for a in ("--set", s)]], capture_output=True,
                         text=True, cwd=REPO, env=env, check=True)
    run_id = out.stdout.split()[0]
    info = json.loads((Path(home) / "runs" / run_id / "run.json").read_text())
    tracker = Tracker(info["pid"])
    tracker.start()
    try:
        wait_for_moment(moment, Path(home) / "runs" / run_id / "events.jsonl")
    except BaseException:  # interrupted: the search goes with this script
        runs.kill(runs.find(run_id, Path(home)))
        raise
    began = time.monotonic()
    if cli:  # the CLI's kill: a fresh process (its start-up included)
        subprocess.run([EXE, "kill", run_id], capture_output=True, env=env, timeout=120)
    else:  # the console's kill: the control layer, already imported
        runs.kill(runs.find(run_id, Path(home)))
    took = time.monotonic() - began
    tracker.halt.set()
    tracker.join()
    while alive(tracker.seen) and time.monotonic() < began + 30:
        time.sleep(0.02)
    gone = time.monotonic() - began
    time.sleep(max(0.0, began + BOUND_S - time.monotonic()))
    left = alive(tracker.seen)
    names = [tracker.seen[p.pid][1] for p in left]
    for proc in left:  # never let one cycle's leftovers load the next
        proc.kill()
    psutil.wait_procs(left, timeout=10)
    return len(tracker.seen), len(left), names, took, gone


def wait_for_moment(moment: str, events: Path) -> None:
    """Early: a random 0.3-8 s; mid: a random 0-4 s after the first trial's first epoch."""
    if moment == "early":
        time.sleep(random.uniform(0.3, 8.0))
        return
    deadline = time.monotonic() + 600
    while not first_epoch(events):
        if time.monotonic() > deadline:
            raise RuntimeError("no trial reported an epoch in 600 s")
        time.sleep(0.05)
    time.sleep(random.uniform(0.0, 4.0))  # epochs of a fraction of a second: anywhere in one


def main() -> None:
    """Load the machine, run the cycles, print one line a cycle and the totals."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--busy", type=int, default=8)
    parser.add_argument("--cycles", type=int, default=5)
    parser.add_argument("--moments", default="early,mid")
    parser.add_argument("--cli", action="store_true", help="kill through the CLI (default: as the console)")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # the busy loops go with this script
    spinners = busy(args.busy)
    try:
        time.sleep(2)
        print(f"machine: {machine()}; {args.busy} busy loops")
        for moment in args.moments.split(","):
            total = dirty = 0
            took: list[float] = []
            for i in range(args.cycles):
                with tempfile.TemporaryDirectory(prefix="tc-kill-") as home:
                    seen, left, names, kill_s, gone_s = cycle(moment, home, args.cli)
                total, dirty = total + 1, dirty + (left > 0)
                took.append(gone_s)
                print(f"{moment} {i}: {seen} processes, {left} alive at {BOUND_S:.0f} s {names}, kill took "
                      f"{kill_s:.2f} s, none left after {gone_s:.2f} s", flush=True)
            print(f"{moment}: {dirty} of {total} kills left a process at {BOUND_S:.0f} s; none left after "
                  f"{min(took):.2f}-{max(took):.2f} s (load {os.getloadavg()[0]:.1f})", flush=True)
    finally:
        for proc in spinners:
            proc.kill()


if __name__ == "__main__":
    main()
