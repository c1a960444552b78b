"""The run lifecycle under the control layer: launch, resume, status, stop, kill, wait.

Front ends call `trainconsole.control.Control`, never this module. Where a run lives (this host, another
host, a Slurm job) is its place (`control/places/`): every start, stop and kill goes through the run's
place, chosen once (`places.for_config` for a new run, `places.of` by its run.json after). A run's only
channel back is its event log.
"""

from __future__ import annotations

import os
import shutil
import socket
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from trainconsole import protocol
from trainconsole.protocol import Config, Event, RunDir, index, places
from trainconsole.protocol.places.host import remote
from trainconsole.protocol.run_row import ENDED, LIVE

from . import places as placed
from .commands import COMMANDS, OUR_MODULES, QUEUE_WAITER  # noqa: F401 - (the run kinds' commands)
from .places.local import leader
from .places.sbatch import SlurmError


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
    place = placed.for_config(config)
    queued = bool(config["strategy"]["queue"]) and place.name == "local"  # a scheduler queues it itself
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
            place.start(run, info, _command(run, info, resume=False), config, _ran_s(run, info))
        except SlurmError:
            shutil.rmtree(run.path, ignore_errors=True)  # Slurm refused it: no run half-made
            raise
    return run


#: How long a resume waits for a run that has said its last word (`stopped`) to finish exiting.
EXITING_S = 30.0


def resume(run: RunDir, epochs: int | None = None, slurm: list[str] | None = None) -> RunDir:
    """Start a stopped, failed, killed or lost run again from its `last.pt`; its event log continues
    (with `epochs`, a training run's config is given that many epochs in all first; with `slurm`, a
    Slurm run's new options, `--set` style: `slurm.time="2:00:00"`).

    Raises RunBusy if the run's process is alive, here or on another host (another resume may have just
    started it); a run whose log already ends with its final event (a search's driver shutting Ray down)
    is waited for.
    """
    _wait_exiting(run)
    with run.lock():
        info = run.read_info()
        if places.alive(run.path, info):
            raise protocol.RunBusy(run.id, remote(info))
        builtin = not info.get("argv") and info.get("kind", "train") == "train"
        if builtin and not run.last_ckpt.exists():
            raise FileNotFoundError(f"run {run.id} has no checkpoint to resume from ({run.last_ckpt})")
        if epochs is not None:
            config = protocol.load(run.config)
            config["train"]["epochs"] = epochs
            _write_atomic(run.config, protocol.dumps(config))
        if slurm:
            from .places.slurm import with_options

            _write_atomic(run.config, protocol.dumps(with_options(run, slurm)))
        # where run.json places it: a Slurm run as a new job; a run of another host's resumes here
        placed.of(info).start(run, info, _command(run, info, resume=True), None, _ran_s(run, info))
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


def status(run: RunDir, events: list[Event] | None = None, info: dict[str, Any] | None = None) -> str:
    """The run's one status (`protocol.run_status`), after reaping a child of ours that has exited."""
    placed.local.reap(run.id)
    state = protocol.run_status(run, events, info)
    if state == "lost":  # the place's word on how the run ended (a Slurm job's end), if not yet said
        info = run.read_info()
        if places.of(info).settle(run.path, info) is not None:
            return protocol.run_status(run)
    return state


def summary(run: RunDir) -> dict[str, Any]:
    """The run as one `ls` row (`protocol.index.row`), derived now."""
    info, events = run.read_info(), protocol.tail(run.events)
    return index.row(run, info, events, status(run, events, info))


def summaries(root: Path, found: list[RunDir] | None,
              wanted: Callable[[index.Summary], bool] | None = None) -> Sequence[index.Summary]:
    """Each run's summary (its `ls` row, best metrics, config keys: every run's when `found` is None),
    from the run index where it is still true; only those `wanted` wants (a filter)."""
    return index.summaries(root, status, found, wanted)


def stop(run: RunDir, grace: float = 30.0) -> str:
    """Ask the run to checkpoint and stop (here SIGTERM; elsewhere its place's way); kill it if it
    outlives `grace` seconds. Its status after."""
    return placed.of(run.read_info()).stop(run, status, grace)


def kill(run: RunDir) -> list[int]:
    """End the run's whole process family wherever it lives, and record `killed`. Returns surviving pids."""
    return kill_run(run).survivors


def kill_run(run: RunDir) -> placed.Kill:
    """`kill`, with what it did: the status before, whether it ended the run now, the survivors."""
    return placed.of(run.read_info()).kill(run, status)


def wait(run: RunDir, on_event: Callable[[Event], None] | None = None, poll: float = 0.2) -> str:
    """Block until the run ends, passing each new event to `on_event`; return the final status."""
    reader = protocol.EventReader(run.events)
    while True:
        for event in reader.read():
            if on_event is not None:
                on_event(event)
        state = status(run)
        if state not in LIVE:
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
