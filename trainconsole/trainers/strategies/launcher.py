"""Spawning and watching the processes of a multi-process run (DDP): one rank per local device.

The launcher is the run's main process. It spawns the ranks, forwards a stop (SIGTERM) to each rank once
that rank is ready to handle it, and watches them all: when one dies, the others and their DataLoader
workers are killed at once and `RankFailed` names the rank and its cause, so no rank waits forever in a
collective. Ranks report through small files in a report directory (`<run>/ranks/`): `N.ready`,
`N.error` (JSON: cause, hint, traceback) and `N.result` (local rank 0's return value, pickled).

Stdlib and psutil only at import: a rank installs its signal handlers before anything imports torch.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import pickle
import shutil
import signal
import sys
import time
import traceback
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any

from ..errors import TrainerError
from ..lifecycle import reaper
from ..lifecycle.signals import StopFlag, install_stop_handlers
from ..troubles.explain import explain, traceback_tail

POLL_S = 0.1


class RankFailed(TrainerError):
    """A rank died; `event_fields` are the `failed` event's cause, hint and traceback, from that rank."""

    def __init__(self, rank: int, cause: str, hint: str = "", tail: str = "") -> None:
        super().__init__(f"rank {rank}: {cause}")
        self.rank = rank
        self.event_fields = {"cause": f"rank {rank}: {cause}", "hint": hint, "traceback": tail, "rank": rank}


@dataclass
class Call:
    """What every rank runs: `fn(strategy, *args, **kwargs)`, with `stop=` its own flag if `stop` is given
    (the launcher's flag, which a SIGTERM to the launcher sets and which it forwards to the ranks)."""

    fn: Any
    args: tuple
    kwargs: dict[str, Any] = field(default_factory=dict)
    stop: StopFlag | None = None


def spawn_ranks(strategy: Any, call: Call, envs: list[dict[str, str]], report_dir: Path) -> Any:
    """Run `strategy.run_rank(i, ...)` on `call` in one spawned process per `envs[i]`; local rank 0's
    result."""
    shutil.rmtree(report_dir, ignore_errors=True)
    report_dir.mkdir(parents=True)
    stop = call.stop if call.stop is not None else StopFlag()
    # unpickled (importing torch) after the rank's handlers are set; the flag itself stays here
    payload = pickle.dumps((strategy, call.fn, call.args, call.kwargs, call.stop is not None, stop.is_set()))
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=worker_main, args=(i, env, payload, str(report_dir)), name=f"rank-{i}")
             for i, env in enumerate(envs)]
    since = time.time()
    try:
        for proc in procs:
            proc.start()
        return RankWatch(procs, [int(e["RANK"]) for e in envs], report_dir, stop).wait()
    finally:
        reaper.kill_ranks(procs, since)


class RankWatch:
    """Waits for every rank, forwarding a stop; raises RankFailed as soon as one rank fails."""

    def __init__(self, procs: list[Any], ranks: list[int], report_dir: Path, stop: StopFlag) -> None:
        self.procs, self.ranks, self.dir, self.stop = procs, ranks, report_dir, stop
        self.forwarded: set[int] = set()

    def wait(self) -> Any:
        """Block until all ranks exit; return local rank 0's result (None if it left none)."""
        while True:
            self.forward_stop()
            live = [p for p in self.procs if p.exitcode is None]
            failed = [i for i, p in enumerate(self.procs) if p.exitcode not in (None, 0)]
            if failed:
                raise self.failure(failed)
            if not live:
                return read_result(self.dir / "0.result")
            wait([p.sentinel for p in live], timeout=POLL_S)

    def forward_stop(self) -> None:
        """Pass a requested stop on (SIGTERM) to every live rank that has its handler installed."""
        if not self.stop.is_set():
            return
        for i, proc in enumerate(self.procs):
            if i not in self.forwarded and proc.exitcode is None and (self.dir / f"{i}.ready").exists():
                os.kill(proc.pid, signal.SIGTERM)
                self.forwarded.add(i)

    def failure(self, failed: list[int]) -> RankFailed:
        """The root cause among the failed ranks: a death without a report (a signal) or the first report."""
        reports = {i: read_error(self.dir / f"{i}.error") for i in failed}
        first = min(failed, key=lambda i: (reports[i] is not None, (reports[i] or {}).get("t", 0.0)))
        report = reports[first]
        if report is not None:
            return RankFailed(self.ranks[first], report["cause"], report["hint"], report["traceback"])
        code = self.procs[first].exitcode
        if code < 0:
            name = signal.Signals(-code).name
            oom = "SIGKILL often means the kernel's out-of-memory killer (see dmesg)"
            return RankFailed(self.ranks[first], f"killed by {name}", oom if name == "SIGKILL" else "")
        return RankFailed(self.ranks[first], f"exited with code {code} without reporting an error")


def worker_main(local_rank: int, env: dict[str, str], payload: bytes, report_dir: str) -> None:
    """A rank's process: handlers first, then torch, then `strategy.run_rank`; failures are reported."""
    reaper.die_with_parent()
    # spawn made itself this process's default; DataLoader workers get the platform's (fork on Linux),
    # as under torchrun, instead of paying a torch import each
    multiprocessing.set_start_method(multiprocessing.get_all_start_methods()[0], force=True)
    stop = StopFlag()
    install_stop_handlers(stop)
    os.environ.update(env)
    reports = Path(report_dir)
    (reports / f"{local_rank}.ready").touch()
    strategy = None
    try:
        strategy, fn, args, kwargs, wants_stop, stopped = pickle.loads(payload)
        if wants_stop:
            kwargs["stop"] = stop  # this process's own flag
        if stopped:
            stop.set()
        result = strategy.run_rank(local_rank, fn, args, kwargs)
        if local_rank == 0:
            write_atomic(reports / "0.result", pickle.dumps(result))
    except BaseException as exc:  # noqa: BLE001 - every failure must reach the launcher
        report_error(reports / f"{local_rank}.error", exc, getattr(strategy, "config", None))
        reaper.exit_now(1)
    reaper.exit_now(0)


def report_error(path: Path, exc: BaseException, config: Any) -> None:
    """Write the rank's cause, hint and traceback tail, and the full traceback to stderr."""
    why = explain(exc, config)
    report = {"cause": why.cause, "hint": why.hint, "traceback": traceback_tail(exc), "t": time.time()}
    write_atomic(path, json.dumps(report).encode())
    traceback.print_exception(exc, file=sys.stderr)


def write_atomic(path: Path, data: bytes) -> None:
    """Write to a temp file, then rename: the launcher never reads half a report."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def read_error(path: Path) -> dict[str, Any] | None:
    """A rank's error report, or None."""
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None


def read_result(path: Path) -> Any:
    """Local rank 0's return value (written by this run's own rank moments ago), or None."""
    try:
        return pickle.loads(path.read_bytes())
    except OSError:
        return None
