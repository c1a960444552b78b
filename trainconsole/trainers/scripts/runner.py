"""The leader of a script run: starts the user's script, reads its output into events, ends the run.

The script runs in the directory `run` was called from (the runner's own), in the runner's process group
(so `kill` takes it and everything it starts), with `--nproc N` through `torch.distributed.run`. A SIGTERM
to the runner (`stop`) is passed to the script (with `--nproc`, to each rank), not to its DataLoader
workers, which die on a stray SIGTERM. The final event follows the exit: `stopped`
after our SIGTERM, else `finished` on exit code 0, else `failed` with the traceback's cause.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any

import psutil

from trainconsole.protocol import Config, EventWriter, RunDir
from trainconsole.trainers.lifecycle.reaper import die_with_parent

from ..lifecycle.memory import TreeMemory
from ..slurm.nodes import rendezvous, rendezvous_nodes
from .lightning_csv import LightningCsvTail
from .lines import compile_patterns
from .measured import Measured
from .mlflow_store import MlflowTail, stores
from .output import OutputEvents, Pump
from .probe_channel import probe_environment
from .probe_tail import ProbeTail
from .report import ENV_EVENTS, ENV_RUN_ID
from .steps import batch_size, epochs
from .tensorboard_tail import TensorBoardTail
from .tracebacks import hint

ENV_RUN_DIR = "TRAINCONSOLE_RUN_DIR"
#: How long the output may keep flowing after the script exits (from processes it left behind).
DRAIN_S = 5.0


def command(script: dict[str, Any], python: str = sys.executable) -> list[str]:
    """The script's command line: plain python, or torch's elastic launcher with N processes."""
    if script["nproc"]:  # (across a Slurm job's nodes, a rendezvous on its first node: slurm_nodes)
        return [python, "-m", "torch.distributed.run", *rendezvous(), f"--nproc-per-node={script['nproc']}",
                script["path"], *script["args"]]
    return [python, "-u", script["path"], *script["args"]]


def environment(run: RunDir, devices: Any) -> dict[str, str]:
    """The script's environment: ours, unbuffered output, where to report, the chosen GPUs, and
    trainconsole reachable (`report()`) after the script's own paths, in any interpreter."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", ENV_RUN_DIR: str(run.path), ENV_EVENTS: str(run.events),
           ENV_RUN_ID: run.id}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH", ""), str(reach(run))) if p)
    if isinstance(devices, list):
        env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, devices))
    return env


def reach(run: RunDir) -> Path:
    """`<run>/.reach/`, a folder holding only a link to this `trainconsole` package: on the script's
    PYTHONPATH it makes `from trainconsole.trainers import report` work in a Python that lacks
    trainconsole (the user's own, `--python`), and brings none of our other packages with it."""
    folder = run.path / ".reach"
    link = folder / "trainconsole"
    package = Path(__file__).resolve().parents[2]
    folder.mkdir(exist_ok=True)
    if not link.is_symlink() or link.resolve() != package:
        link.unlink(missing_ok=True)
        link.symlink_to(package, target_is_directory=True)
    return folder


def python_of(script: dict[str, Any]) -> str:
    """The interpreter the script runs with: `[script] python` (the launch records the default's path)."""
    return script.get("python") or sys.executable


def tensorboard_folders(script: dict[str, Any]) -> list[Path]:
    """Where to look for TensorBoard event files: `[script] tensorboard`, and SummaryWriter's `runs/`."""
    cwd = Path.cwd()
    return [cwd / script["tensorboard"]] * bool(script["tensorboard"]) + [cwd / "runs"]


def csv_folders(script: dict[str, Any]) -> list[Path]:
    """Where to look for Lightning's metrics.csv: `[script] csv_logs`, and CSVLogger's `lightning_logs/`."""
    cwd = Path.cwd()
    return [cwd / script["csv_logs"]] * bool(script["csv_logs"]) + [cwd / "lightning_logs"]


def file_tails(script: dict[str, Any], since: float, emit: Any) -> list[Any]:
    """The threads that read the structured logs the script writes: TensorBoard, Lightning CSV, MLflow."""
    return [TensorBoardTail(tensorboard_folders(script), since, emit),
            LightningCsvTail(csv_folders(script), since, emit),
            MlflowTail(stores(Path.cwd(), script["mlruns"], dict(os.environ)), since, emit)]


class ScriptRun:
    """One execution of the script: start, forward a stop, wait, and say how it ended."""

    def __init__(self, run: RunDir, config: Config, writer: EventWriter) -> None:
        self.run, self.config, self.writer = run, config, writer
        self.proc: subprocess.Popen[bytes] | None = None
        self.stop_asked = False

    def ask_stop(self, signum: int, frame: FrameType | None = None) -> None:
        """Signal handler: remember the stop and pass SIGTERM to the script (with --nproc, to its ranks)."""
        self.stop_asked = True
        if self.proc is None or self.proc.poll() is not None:
            return
        for target in _stop_targets(self.proc.pid, bool(self.config["script"]["nproc"])):
            try:
                target.send_signal(signal.SIGTERM)
            except psutil.Error:
                pass

    def execute(self, resumed: bool = False) -> int:
        """Run the script to its end; emit `started` and the final event; return its exit code."""
        if self.stop_asked:  # stopped before it started
            self.writer.emit("stopped", exit_code=None)
            return 0
        script, devices = self.config["script"], self.config["strategy"]["devices"]
        # die_with_parent: if this runner is killed alone, the script does not live on unseen.
        env = environment(self.run, devices)
        if script["measure"]:  # the probe in every Python process of the script (inject/sitecustomize.py)
            env = probe_environment(env, self.probe_folder)
        self.proc = subprocess.Popen(command(script, python_of(script)), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                     preexec_fn=die_with_parent)
        if self.stop_asked:
            self.ask_stop(signal.SIGTERM)
        self._started(script, devices, resumed)
        memory = TreeMemory(self.proc.pid)
        events = OutputEvents(self.writer, script["patterns"], script["parse_output"], memory,
                              batch_size=batch_size(script["args"]), measured=self._measured(script))
        assert self.proc.stdout is not None and self.proc.stderr is not None
        pumps = [Pump(self.proc.stdout.fileno(), sys.stdout.fileno(), events.stdout),
                 Pump(self.proc.stderr.fileno(), sys.stderr.fileno(), events.stderr)]
        poller = ProbeTail(events.poll)
        tails = file_tails(script, time.time(), self._structured(events))
        for thread in (*pumps, *tails, poller):
            thread.start()
        code = self.proc.wait()
        deadline = time.monotonic() + DRAIN_S
        for pump in pumps:
            pump.join(timeout=max(0.0, deadline - time.monotonic()))
        poller.finish()
        events.close()
        for tail in tails:
            tail.finish()
        self._final(code, events)
        return code

    def _structured(self, events: OutputEvents) -> Any:
        """How a structured log's reader (TensorBoard, Lightning CSV, MLflow) emits: a `loss` or `lr` it
        reads is the script's own series, so the probe's step events leave it out from then on (else a
        run has two `loss` series, e.g. a TensorBoard `global_step` from 0 beside the probe's count from
        1)."""
        def emit(kind: str, **fields: Any) -> None:
            if kind == "step" and events.measured is not None:
                events.measured.figures.own |= {"loss", "lr"} & fields.keys()
            self.writer.emit(kind, **fields)
        return emit

    @property
    def probe_folder(self) -> Path:
        """Where the probe's processes report (one file each)."""
        return self.run.path / "probe"

    def _measured(self, script: dict[str, Any]) -> Any:
        """How OutputEvents makes the probe's view of the run (None with `measure = false`)."""
        if not script["measure"]:
            return None
        return lambda text: Measured(self.writer, self.probe_folder, compile_patterns(script["patterns"]),
                                     epochs(script["args"]), text)

    def _started(self, script: dict[str, Any], devices: Any, resumed: bool) -> None:
        assert self.proc is not None
        nproc, total = script["nproc"], epochs(script["args"])  # the script's own epochs, never train.epochs
        world = max(nproc, 1) * (rendezvous_nodes() if nproc else 1)  # (across a Slurm job's nodes)
        self.writer.emit("started", strategy="torchrun" if nproc else "script", world_size=world,
                         devices=devices, script=script["path"], args=script["args"], pid=self.proc.pid,
                         **({"epochs": total} if total else {}), **({"resumed": True} if resumed else {}))

    def _final(self, code: int, events: OutputEvents) -> None:
        if self.stop_asked:
            self.writer.emit("stopped", exit_code=code, step=events.step, **cpu_seconds())
        elif code == 0:
            best = {"best_val_acc": events.best_val_acc} if events.best_val_acc is not None else {}
            last = events.measured.figures.last if events.measured is not None else {}  # its last step's
            self.writer.emit("finished", exit_code=0, step=events.step, **best, **last, **cpu_seconds())
        else:
            if events.measured is not None:  # an unprefixed rank's traceback: its exception, as it saw it
                events.watch.rank_errors = events.measured.rank_errors
            cause = events.watch.cause or _exit_cause(code, events.last_error)
            measured = events.measured.figures.failure() if events.measured is not None else {}
            self.writer.emit("failed", cause=cause, hint=hint(cause), traceback=events.watch.traceback,
                             exit_code=code, **measured)


def cpu_seconds() -> dict[str, float]:
    """CPU time (user + system) of this runner and of the script's processes it waited for: what reading
    the output costs next to what the script itself used."""
    me, script = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"runner_cpu_s": round(me.ru_utime + me.ru_stime, 3),
            "script_cpu_s": round(script.ru_utime + script.ru_stime, 3)}


def _stop_targets(pid: int, elastic: bool) -> list[psutil.Process]:
    """Who gets the SIGTERM of a stop. Under torch's elastic agent, its ranks: the agent itself would
    SIGTERM each rank's whole process group, DataLoader workers included, and a rank that is finishing its
    step then dies of "DataLoader worker exited unexpectedly". Once the ranks exit 0, so does the agent."""
    try:
        proc = psutil.Process(pid)
        return (proc.children() if elastic else []) or [proc]
    except psutil.Error:
        return []


def _exit_cause(code: int, last_error: str) -> str:
    if code < 0:
        try:
            return f"the script was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"the script was killed by signal {-code}"
    said = f": {last_error[:200]}" if last_error else " (nothing on stderr)"
    return f"the script exited with code {code}{said}"
