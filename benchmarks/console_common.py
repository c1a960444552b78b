"""Shared by the console benchmarks: fake run directories, and the real console in a pseudo-terminal."""

from __future__ import annotations

import fcntl
import json
import math
import os
import pty
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from trainconsole.protocol import RunDir, defaults, dumps  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
EXE = str(Path(sys.executable).parent / "trainconsole")


def machine() -> str:
    """One line describing where the figures were taken (and how busy it was)."""
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), "unknown CPU")
    load = os.getloadavg()[0]
    return f"{cpu}, {os.cpu_count()} cores, Python {sys.version.split()[0]}, load average {load:.1f}"


def make_run(home: Path, run_id: str, steps: int = 0, epochs: int = 5, pid: int | None = None) -> RunDir:
    """A run directory with `steps` step events (10 per second of training) and an eval per epoch."""
    (home / "runs").mkdir(parents=True, exist_ok=True)
    run = RunDir.create(home, run_id)
    run.config.write_text(dumps(defaults()))
    proc = psutil.Process(pid) if pid else None
    t0 = time.time() - steps / 10 - 60
    run.write_info({"id": run_id, "name": "small_cnn-digits", "kind": "train", "strategy": "single",
                    "status": "running", "started_at": t0, "ended_at": None, "pid": pid,
                    "pid_started": proc.create_time() if proc else None})
    lines = [{"t": t0, "type": "started", "strategy": "single", "world_size": 1, "devices": ["cpu"]}]
    per_epoch = max(1, steps // epochs)
    for step in range(1, steps + 1):
        lines.append({"t": t0 + step / 10, "type": "step", "step": step, "epoch": 1 + (step - 1) // per_epoch,
                      "loss": 2.3 * math.exp(-step / 500) + 0.05, "lr": 0.05, "samples_per_s": 2100.0,
                      "mem": {"devices": [], "rss": 812 << 20}})
        if step % per_epoch == 0:
            lines.append({"t": t0 + step / 10, "type": "eval", "epoch": step // per_epoch, "step": step,
                          "val_loss": 0.3, "val_acc": 0.9})
    if pid is None and steps:
        lines.append({"t": t0 + steps / 10 + 1, "type": "finished", "best_val_acc": 0.9})
    with open(run.events, "w") as f:
        f.writelines(json.dumps({"v": 1, "run": run_id, **e}, separators=(",", ":")) + "\n" for e in lines)
    return run


class Console:
    """`trainconsole` (or any command) on a pseudo-terminal of a given size, its output drained."""

    def __init__(self, home: Path, cmd: list[str] | None = None, size: tuple[int, int] = (120, 40),
                 env: dict[str, str] | None = None, cwd: Path = REPO) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
        full_env = {**os.environ, "TRAINCONSOLE_HOME": str(home), "TERM": "xterm-256color", **(env or {})}
        for var in ("COLUMNS", "LINES", "NO_COLOR"):
            full_env.pop(var, None)
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(cmd or [EXE], stdin=slave, stdout=slave, stderr=slave, cwd=cwd,
                                     env=full_env, start_new_session=True, close_fds=True)
        os.close(slave)
        self.master, self.output, self.written = master, bytearray(), 0
        self.first_frame: float | None = None
        self.first_frame_cpu: float | None = None  # the process's user+system seconds by then
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 1 << 16)
            except OSError:
                return
            if not chunk:
                return
            self.written += len(chunk)
            if self.first_frame is None:
                self.output += chunk
                if b"Quit" in self.output:  # the footer: the whole first frame is out
                    self.first_frame = time.perf_counter() - self.started
                    self.first_frame_cpu = sum(psutil.Process(self.proc.pid).cpu_times()[:2])

    def wait_first_frame(self, timeout: float = 20.0) -> float:
        """Seconds from exec to the first complete frame on the terminal."""
        deadline = time.monotonic() + timeout
        while self.first_frame is None:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError("no first frame: " + self.output[-2000:].decode(errors="replace"))
            time.sleep(0.002)
        return self.first_frame

    def quit(self) -> None:
        """Press q and wait for the process to end."""
        try:
            os.write(self.master, b"q")
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        os.close(self.master)


def finished_runs(home: Path, count: int, steps: int = 500) -> None:
    """The home the console benchmarks open: `count` finished runs of `steps` step events each."""
    for i in range(count):
        make_run(home, f"20240101-{i:06d}-small-cnn-digits-{i:04x}", steps=steps)


#: Text only the dashboard draws (its devices pane): in what was timed as trainconsole's first frame, it
#: means the first screen's footer lost its `Quit` (too many keys for the width) and the dashboard was timed.
DASHBOARD = b"sampling devices"


def cold_start(home: Path, cmd: list[str] | None = None, cwd: Path = REPO) -> tuple[float, float, bool]:
    """One fresh process (started in `cwd`) to its first frame: (wall seconds, CPU seconds of the process,
    whether the frame timed had the dashboard in it); then quit it."""
    console = Console(home, cmd=cmd, cwd=cwd)
    try:
        wall = console.wait_first_frame()
        time.sleep(0.05)  # the reader thread records the CPU time right after it saw the frame
        return wall, console.first_frame_cpu or float("nan"), DASHBOARD in console.output
    finally:
        console.quit()
