"""The run lifecycle under the control layer: launch, resume, status, stop, kill, wait.

Front ends call `trainconsole.control.Control`, never this module. Runs are detached processes
(`start_new_session=True`, stdio to files in the run directory), so neither the console exiting nor an
SSH hang-up reaches them. Their only channel back is the run's event log.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trainconsole import protocol
from trainconsole.protocol import Config, Event, RunDir, index, processes, slurm_config
from trainconsole.protocol.events import RESERVE
from trainconsole.protocol.kills import record_kill
from trainconsole.protocol.launch import ENV_LAUNCH_DIR, is_module_command, module_command
from trainconsole.protocol.places import host as hosts
from trainconsole.protocol.places.slurm import settle
from trainconsole.protocol.run_row import ENDED
from trainconsole.protocol.stops import held_stops

from .places import host as remote
from .places import slurm as slurm_runs
from .places.sbatch import SlurmError

#: Children launched by this process, kept so that they are reaped (no zombies while a console runs).
_children: dict[str, subprocess.Popen[bytes]] = {}

#: What each kind of run executes, "{run_dir}" being its directory (`--resume` is appended to resume).
COMMANDS = {kind: [*module_command(module), "{run_dir}"] for kind, module in
            (("train", "trainconsole.trainers"), ("tune", "trainconsole.trainers.tune"),
             ("script", "trainconsole.trainers.scripts"))}
#: A queued run's first command: the waiter, which becomes the kind's command once devices have room.
QUEUE_WAITER = [*module_command("trainconsole.trainers.lifecycle.queue"), "{run_dir}", "--"]
#: Our entry points: each installs its stop handler, then takes the stops held back while it started.
OUR_MODULES = frozenset(command[3] for command in [*COMMANDS.values(), QUEUE_WAITER])


def kind_of(config: Config) -> str:
    """The kind of run a validated config makes: `tune` with a [tune] section, `script` with a script path."""
    if "tune" in config:
        return "tune"
    return "script" if (config.get("script") or {}).get("path") else "train"


def default_name(config: Config, kind: str) -> str:
    """A run's name when none is given: the script's stem, else the model and data (`tune-` for a search)."""
    if kind == "script":
        return Path(config["script"]["path"]).stem
    name = f"{config['model']['name']}-{config['data']['name']}"
    return f"tune-{name}" if kind == "tune" else name


def launch_command(kind: str, queued: bool) -> list[str] | None:
    """What a new run executes: through the queue waiter when queued; None for a built-in kind's default."""
    if queued:
        return [*QUEUE_WAITER, *COMMANDS[kind]]
    return list(COMMANDS[kind]) if kind == "script" else None


def launch(config: Config, name: str = "", root: Path | None = None, argv: list[str] | None = None) -> RunDir:
    """Create a run directory for a validated config and start its process detached.

    The kind, the default name and the queue (`[strategy] queue`: the run is `queued` until the waiter
    hands it to its command) all follow from the config. `argv` replaces the command (tests); a
    "{run_dir}" in it becomes the run's path.
    """
    root = root or protocol.home()
    kind = kind_of(config)
    name = name or default_name(config, kind)
    in_slurm = slurm_config.submitted(config)  # Slurm queues it: no waiter of ours
    queued = bool(config["strategy"]["queue"]) and not in_slurm
    argv = argv if argv is not None else launch_command(kind, queued)
    run = RunDir.create(root, protocol.new_run_id(name))
    run.config.write_text(protocol.dumps(config))
    info = {"id": run.id, "name": name, "kind": kind, "strategy": config["strategy"]["name"],
            "host": socket.gethostname(), "cwd": os.getcwd(), "ended_at": None}
    if argv is not None:
        info["argv"] = argv
    if queued:
        info["queued"] = True
    with run.lock():
        try:
            _place(run, info, resume=False, config=config)
        except SlurmError:
            shutil.rmtree(run.path, ignore_errors=True)  # Slurm refused it: no run half-made
            raise
    return run


def _place(run: RunDir, info: dict[str, Any], resume: bool, config: Config | None = None) -> None:
    """Start the run's process where its config places it: here, or as a Slurm job (`[slurm]`)."""
    if config is None and "slurm" in info:
        config = protocol.load(run.config)
    command = _command(run, info, resume=resume)
    if config is not None and slurm_config.submitted(config):
        slurm_runs.submit(run, info, command, config["slurm"], _ran_s(run, info))
    else:
        _start(run, command, info)


#: How long a resume waits for a run that has said its last word (`stopped`) to finish exiting.
EXITING_S = 30.0


def resume(run: RunDir, epochs: int | None = None) -> RunDir:
    """Start a stopped, failed, killed or lost run again from its `last.pt`; its event log continues
    (with `epochs`, a training run's config is given that many epochs in all first).

    Raises RunBusy if the run's process is alive, here or on another host (another resume may have just
    started it); a run whose log already ends with its final event (a search's driver shutting Ray down)
    is waited for.
    """
    _wait_exiting(run)
    with run.lock():
        info = run.read_info()
        if hosts.alive(run.path, info):
            raise protocol.RunBusy(run.id, hosts.remote(info))
        builtin = not info.get("argv") and info.get("kind", "train") == "train"
        if builtin and not run.last_ckpt.exists():
            raise FileNotFoundError(f"run {run.id} has no checkpoint to resume from ({run.last_ckpt})")
        if epochs is not None:
            config = protocol.load(run.config)
            config["train"]["epochs"] = epochs
            _write_atomic(run.config, protocol.dumps(config))
        _place(run, info, resume=True)
    return run


def _wait_exiting(run: RunDir) -> None:
    """Until the run's process is gone, if its status is already final (its log ended it since its last
    launch: it is exiting); at once otherwise."""
    deadline = time.monotonic() + EXITING_S
    while time.monotonic() < deadline and leader(run) is not None and status(run) in ENDED:
        time.sleep(0.2)


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _command(run: RunDir, info: dict[str, Any], resume: bool) -> list[str]:
    argv = info.get("argv") or COMMANDS.get(info.get("kind", "train"), COMMANDS["train"])
    return [str(a).replace("{run_dir}", str(run.path)) for a in argv] + (["--resume"] if resume else [])


def _start(run: RunDir, command: list[str], info: dict[str, Any]) -> None:
    """Start the run's process (the caller holds the run's lock) and record its identity in run.json."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    cwd = info.get("cwd") or os.getcwd()
    # Plug-ins ("package.module:factory") resolve from the directory the run was launched from, after the
    # installed packages (`launch.reach_launch_dir`): on PYTHONPATH it would shadow them, ours included.
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
                    "pid_started": started, "started_at": time.time(), "ended_at": None, "dequeued_at": None,
                    "ran_s": _ran_s(run, info)})


def _ran_s(run: RunDir, info: dict[str, Any]) -> float:
    """Seconds the run's earlier processes ran: a resume adds the one that ended to those before it, so
    the run's elapsed time and wall time go on from where they were rather than from 0."""
    before, start = float(info.get("ran_s") or 0.0), info.get("started_at")
    if not info.get("pid_started") or not isinstance(start, (int, float)):
        return before  # never started a process (a new run)
    end = info.get("ended_at")
    if not isinstance(end, (int, float)) or end < start:  # killed or lost: its log's last write
        try:
            end = run.events.stat().st_mtime
        except OSError:
            end = start
    return before + max(0.0, end - start)


def leader(run: RunDir, info: dict[str, Any] | None = None) -> Any:
    """The run's live launcher process (psutil.Process), or None (always for a run on another host: a
    process here with its pid and start time is a stranger)."""
    child = _children.get(run.id)
    if child is not None:
        child.poll()  # reap it if it has exited
    info = info if info is not None else run.read_info()
    return None if remote.is_remote(info) else processes.find(info.get("pid"), info.get("pid_started"))


def status(run: RunDir, events: list[Event] | None = None, info: dict[str, Any] | None = None) -> str:
    """The run's one status (`protocol.run_status`), after reaping a child of ours that has exited."""
    child = _children.get(run.id)
    if child is not None:
        child.poll()
    state = protocol.run_status(run, events, info)
    if state == "lost" and "slurm" in (info if info is not None else run.read_info()):
        settle(run.path, run.read_info())  # Slurm's word on how its job ended, if not yet said
        return protocol.run_status(run)
    return state


def summary(run: RunDir) -> dict[str, Any]:
    """The run as one `ls` row (`protocol.index.row`), derived now."""
    info, events = run.read_info(), protocol.tail(run.events)
    return index.row(run, info, events, status(run, events, info))


def summaries(root: Path, found: list[RunDir] | None) -> list[index.Summary]:
    """Each run's summary (its `ls` row, best metrics, config keys: every run's when `found` is None),
    from the run index where it is still true."""
    return index.summaries(root, status, found)


def stop(run: RunDir, grace: float = 30.0) -> str:
    """SIGTERM the run (it checkpoints and emits `stopped`); kill it if it outlives `grace` seconds.
    A run on another host gets the same as a request (`remote.stop`)."""
    info = run.read_info()
    if "slurm" in info:
        return slurm_runs.stop(run, status, grace)
    if remote.is_remote(info):
        return remote.stop(run, status, grace)
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
        kill(run)
    return status(run)


def kill(run: RunDir) -> list[int]:
    """SIGKILL the run's process group and every descendant; record `killed`. Returns surviving pids.
    A run on another host is killed there, on request (`remote.kill`)."""
    info = run.read_info()
    if "slurm" in info:
        return slurm_runs.kill(run, status)
    if remote.is_remote(info):
        return remote.kill(run, status)
    with run.lock():
        info = run.read_info()
        was = status(run, info=info)
        procs = processes.frozen_family(leader(run, info), info.get("pgid"), info.get("pid_started") or 0.0)
        survivors = processes.kill_all(procs)
        if run.id in _children:
            _children[run.id].poll()
        if not survivors and (was in ("running", "queued") or (was == "lost" and procs)):
            record_kill(run, [p.pid for p in procs])
        if not survivors:  # what only the run would have removed: the trainer's disk ballast, and a
            (run.path / RESERVE).unlink(missing_ok=True)  # search's short link to its Ray files
            _remove_ray_link(run, info.get("ray_temp_dir"))
    return [p.pid for p in survivors]


def _remove_ray_link(run: RunDir, path: Any) -> None:
    """A search's `/tmp/tcray-*` link (run.json `ray_temp_dir`), if it is one and leads into the run."""
    if not isinstance(path, str):
        return
    link = Path(path)
    with contextlib.suppress(OSError):
        if link.is_symlink() and link.resolve().is_relative_to(run.path.resolve()):
            link.unlink()


def wait(run: RunDir, on_event: Callable[[Event], None] | None = None, poll: float = 0.2) -> str:
    """Block until the run ends, passing each new event to `on_event`; return the final status."""
    reader = protocol.EventReader(run.events)
    while True:
        for event in reader.read():
            if on_event is not None:
                on_event(event)
        state = status(run)
        if state not in ("running", "queued"):
            for event in reader.read():
                if on_event is not None:
                    on_event(event)
            return state
        time.sleep(poll)


def find(run_id: str, root: Path | None = None) -> RunDir | None:
    """The run with this id (or a unique prefix/suffix of it)."""
    return RunDir.find(root or protocol.home(), run_id)


def all_runs(root: Path | None = None) -> list[RunDir]:
    """Every run in the home directory, oldest first."""
    return protocol.list_runs(root or protocol.home())
