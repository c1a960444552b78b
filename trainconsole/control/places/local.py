"""This host: a run's process started here, detached, signalled here, its whole family ended here.

Runs are detached processes (`start_new_session=True`, stdio to files in the run directory), so neither
the console exiting nor an SSH hang-up reaches them. A stop is SIGTERM (the run checkpoints and says
`stopped`); a kill ends the run's process family the one way (`processes.end_family`) and records it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from trainconsole.protocol import Config, RunDir, processes
from trainconsole.protocol.kills import drop_ballast, record_kill
from trainconsole.protocol.launch import ENV_LAUNCH_DIR, is_module_command
from trainconsole.protocol.places import host as hosts
from trainconsole.protocol.places import local
from trainconsole.protocol.run_row import LIVE
from trainconsole.protocol.stops import held_stops

from ..commands import OUR_MODULES
from . import Kill, Place, Status

#: Children launched by this process, kept so that they are reaped (no zombies while a console runs).
_children: dict[str, subprocess.Popen[bytes]] = {}


def reap(run_id: str) -> None:
    """Reap the run's process if this process started it and it has exited."""
    child = _children.get(run_id)
    if child is not None:
        child.poll()


def leader(run: RunDir, info: dict[str, Any] | None = None) -> Any:
    """The run's live launcher process (psutil.Process), or None (always for a run on another host: a
    process here with its pid and start time is a stranger)."""
    reap(run.id)
    info = info if info is not None else run.read_info()
    return None if hosts.remote(info) else processes.find(info.get("pid"), info.get("pid_started"))


class Local(local.Local, Place):
    """A run's process on this host."""

    def start(self, run: RunDir, info: dict[str, Any], command: list[str], config: Config | None,
              ran_s: float) -> None:
        """Start the process detached and record its identity (pid, start time) in run.json."""
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        cwd = info.get("cwd") or os.getcwd()
        # Plug-ins ("package.module:factory") resolve from the directory the run was launched from, after
        # the installed packages (`launch.reach_launch_dir`): on PYTHONPATH it would shadow them, ours too.
        env[ENV_LAUNCH_DIR] = cwd
        # our entry points start with the stop signals blocked and release them once they can take a stop
        ours = is_module_command(command, OUR_MODULES)
        with open(run.stdout, "ab") as out, open(run.stderr, "ab") as err, \
                held_stops() if ours else contextlib.nullcontext():
            proc = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=cwd, env=env,
                start_new_session=True, close_fds=True,
            )
        _children[run.id] = proc
        started = processes.start_time(proc.pid) or time.time()
        info = {k: v for k, v in info.items() if k != "status"}  # the status is derived, never stored
        # host: where this process runs (a run resumed on another host than its first one moves with it)
        run.write_info({**info, "host": hosts.this_host(), "pid": proc.pid, "pgid": proc.pid,
                        "pid_started": started, "started_at": time.time(), "ended_at": None,
                        "dequeued_at": None, "ran_s": ran_s})

    def stop(self, run: RunDir, status: Status, grace: float) -> str:
        """SIGTERM the run's leader; kill the run if it outlives `grace` seconds."""
        with run.lock():
            proc = leader(run)
            if proc is None:
                return status(run)
            proc.send_signal(signal.SIGTERM)
        # Wait outside the lock, so that a `kill` during the grace period is not held up.
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and leader(run) is not None:
            time.sleep(0.1)
        if leader(run) is not None:
            self.kill(run, status)
        return status(run)

    def kill(self, run: RunDir, status: Status) -> Kill:
        """End the run's process group and every descendant; record `killed` if it was alive."""
        with run.lock():
            info = run.read_info()
            was = status(run)
            ended = processes.end_family(leader(run, info), info.get("pgid"), info.get("pid_started") or 0.0)
            reap(run.id)
            recorded = not ended.survivors and (was in LIVE or (was == "lost" and bool(ended.pids)))
            if recorded:
                record_kill(run, ended.pids)
            if not ended.survivors:  # what only the run would have removed: the trainer's disk ballast,
                drop_ballast(run)  # and a search's short link to its Ray files
                _remove_ray_link(run, info.get("ray_temp_dir"))
        return Kill(was, recorded, [p.pid for p in ended.survivors])


def _remove_ray_link(run: RunDir, path: Any) -> None:
    """A search's `/tmp/tcray-*` link (run.json `ray_temp_dir`), if it is one and leads into the run."""
    if not isinstance(path, str):
        return
    link = Path(path)
    with contextlib.suppress(OSError):
        if link.is_symlink() and link.resolve().is_relative_to(run.path.resolve()):
            link.unlink()


PLACE = Local()
