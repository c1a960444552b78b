"""Console test fixtures: deterministic run directories (fixed times, no clocks) and real-run helpers."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest
from textual.widgets import Input

from trainconsole.console.app import TrainConsole
from trainconsole.console.services.gpu import SimulatedGpus
from trainconsole.protocol import RunDir, defaults, dumps

T0 = 1_709_633_700.0  # 2024-03-05 10:15 UTC
NOW = T0 + 3 * 3600.0
REPO = Path(__file__).resolve().parents[2]
FINISHED, FAILED, RUNNING = ("20240305-101500-resnet18-cifar10-7f3a", "20240305-111500-small-cnn-digits-a1b2",
                             "20240305-121500-small-cnn-digits-c3d4")
STOPPED, LOST = "20240305-091500-small-cnn-synthetic-0e0e", "20240305-081500-small-cnn-digits-9b9b"


@pytest.fixture(autouse=True)
def _colour_and_cwd(monkeypatch: pytest.MonkeyPatch) -> None:
    """Snapshots need colour (NO_COLOR breaks them) and the demo config path relative to the repo."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.chdir(REPO)


def write_run(home: Path, run_id: str, events: list[dict[str, Any]], strategy: str = "single",
              info: dict[str, Any] | None = None, epochs: int = 5) -> RunDir:
    """A run directory with these events (one JSON line each) and a run.json."""
    (home / "runs").mkdir(parents=True, exist_ok=True)
    run = RunDir.create(home, run_id)
    config = defaults()
    config["strategy"]["name"], config["train"]["epochs"] = strategy, epochs
    run.config.write_text(dumps(config))
    name = "-".join(run_id.split("-")[2:-1])
    run.write_info({"id": run_id, "name": name, "kind": "train", "strategy": strategy, "status": "running",
                    "started_at": events[0]["t"] if events else T0, "ended_at": None, "pid": None,
                    **(info or {})})
    run.events.write_text("".join(json.dumps({"v": 1, "run": run_id, **e}) + "\n" for e in events))
    return run


def training(t0: float, steps: int, epochs: int, scale: float = 1.0, cuda: bool = False,
             every: int = 10) -> list[dict[str, Any]]:
    """`started`, a falling loss every `every` steps, and an `eval` + `checkpoint` at each epoch end."""
    devices = ["cuda:0", "cuda:1"] if cuda else ["cpu"]
    out: list[dict[str, Any]] = [{
        "t": t0, "type": "started", "strategy": "ddp" if cuda else "single", "world_size": len(devices),
        "devices": devices, "params": 11_181_642, "trainable_params": 5130 if cuda else 11_181_642,
        "resumed_from_step": None,
    }]
    per_epoch = steps // epochs
    mem = {"devices": [{"device": d, "allocated": 1_300_000_000, "reserved": 2_100_000_000,
                        "peak": 1_900_000_000} for d in devices] if cuda else [], "rss": 812 << 20}
    for step in range(every, steps + 1, every):
        t = t0 + step * 0.05
        loss = scale * (2.3 * math.exp(-step / (steps / 4)) + 0.08 + 0.05 * math.sin(step / 7))
        out.append({"t": t, "type": "step", "step": step, "epoch": 1 + (step - 1) // per_epoch, "loss": loss,
                    "count": every, "lr": 0.05, "samples_per_s": 2100.0 - step % 97, "mem": mem})
        if step % per_epoch == 0:
            e = step // per_epoch
            acc = 1 - 0.9 * math.exp(-e / 1.5)
            out.append({"t": t, "type": "eval", "epoch": e, "step": step, "val_loss": loss * 1.1,
                        "val_acc": acc})
            out.append({"t": t, "type": "checkpoint", "path": "checkpoints/last.pt", "epoch": e, "step": step,
                        "is_best": True})
    return out


def histograms(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`events` with a `histogram` event after each `eval`: conv1's weights widen and drift each epoch."""
    out = []
    for event in events:
        out.append(event)
        if event["type"] == "eval":
            e = event["epoch"]
            bell = [round(1000 * math.exp(-(((i - 7.5) / (2 + e / 3)) ** 2))) for i in range(16)]
            out.append({"t": event["t"], "type": "histogram", "epoch": e, "step": event["step"], "bins": 16,
                        "layers": {"conv1.weight": {"min": -0.2 - 0.02 * e, "max": 0.2 + 0.04 * e,
                                                    "counts": bell},
                                   "fc.bias": {"min": 0.0, "max": 0.01 * e, "counts": [9] + [0] * 14 + [1]}}})
    return out


def fixture_runs(home: Path) -> Path:
    """Five runs, one of each status, with fixed times: the snapshot tests' home directory."""
    done = training(T0, 1000, 5, cuda=True)
    write_run(home, FINISHED, [*done, {"t": T0 + 51, "type": "finished", "best_val_acc": 0.9632}], "ddp")
    failed = training(T0 + 3600, 300, 5, scale=1.3)
    failed += [{"t": T0 + 3616, "type": "warning", "code": "dp_single_device",
                "message": "DataParallel on fewer than two GPUs runs as single-device",
                "hint": "use strategy = \"ddp\" to use several processes"},
               {"t": T0 + 3617, "type": "oom_recovered", "batch_size": 32},
               {"t": T0 + 3618, "type": "failed", "cause": "CUDA out of memory: tried to allocate 2.00 GiB",
                "hint": "lower train.batch_size or use precision = \"bf16\"",
                "traceback": "Traceback (most recent call last):\n  File \"loop.py\", line 88, in step\n"
                             "torch.OutOfMemoryError: CUDA out of memory"}]
    write_run(home, FAILED, failed)
    running = histograms(training(T0 + 7200, 400, 10))
    running.insert(30, {"t": T0 + 7200 + 120 * 0.05, "type": "oom_recovered", "step": 120, "micro_batch": 32,
                        "accumulate": 2, "batch_size": 64, "phase": "backward", "device": "cpu"})
    me = psutil.Process()
    write_run(home, RUNNING, running, info={"pid": me.pid, "pid_started": me.create_time()}, epochs=10)
    stopped = [*training(T0 - 3600, 200, 5), {"t": T0 - 3580, "type": "stopped", "step": 200}]
    write_run(home, STOPPED, stopped)
    write_run(home, LOST, training(T0 - 7200, 150, 5), info={"pid": 2**22 + 7, "pid_started": 1.0})
    with open(home / "runs" / LOST / "events.jsonl", "ab") as f:
        f.write(b'not json at all\n{"v":1,"t":1709626600.0,"type":"step","step":160,"lo')  # half a line
    return home


@pytest.fixture
def fixture_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """TRAINCONSOLE_HOME holding the deterministic runs."""
    home = tmp_path / "home"
    monkeypatch.setenv("TRAINCONSOLE_HOME", str(home))
    return fixture_runs(home)


def make_app(home: Path, gpus: int = 2, config: str | Path = "examples/digits.toml") -> TrainConsole:
    """The console over `home`, with simulated GPUs and a frozen clock."""
    return TrainConsole(home=home, sampler=SimulatedGpus(gpus, runs=[RUNNING, FINISHED]), clock=lambda: NOW,
                        config_path=Path(config))


async def settle(pilot: Any, timeout: float = 10.0) -> None:
    """Wait until every run is read and the devices sampled, then draw a frame."""
    app = pilot.app
    deadline = time.monotonic() + timeout
    while not (app.dashboard and app.loaded and app.main.query_one("#bars").devices is not None):
        assert time.monotonic() < deadline, "the console did not load the runs in time"
        await pilot.pause(0.05)
    await pilot.pause(0.05)
    app.main.frames.draw_frame()
    app.main.frames.draw_plot()
    await pilot.pause()


async def steady_cursors(pilot: Any) -> None:
    """Stop every text field's cursor from blinking, shown: a blink is a 0.5 s clock, and a snapshot taken
    more than half a second after the last key (a busy machine) would catch the cursor hidden."""
    for field in pilot.app.screen.query(Input):
        field.cursor_blink = False  # Textual then shows the cursor of a focused field, steadily
    await pilot.pause()


def after(*keys: str) -> Callable[[Any], Any]:
    """A snapshot's run_before: settle, press keys, then draw the frame and plot at once (no timers)."""
    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press(*keys)
        await pilot.pause()
        pilot.app.main.frames.draw_frame()
        pilot.app.main.frames.draw_plot()
        await steady_cursors(pilot)

    return run_before


async def until(pilot: Any, predicate: Callable[[], Any], timeout: float = 60.0, what: str = "it") -> Any:
    """Let the app run until `predicate()` is true."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        await pilot.pause(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def alive(pids: list[int]) -> list[int]:
    """The pids that still run (zombies count as gone)."""
    return [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]


def family(pid: int) -> list[int]:
    """A process and all its descendants."""
    try:
        proc = psutil.Process(pid)
        return [pid, *(c.pid for c in proc.children(recursive=True))]
    except psutil.Error:
        return []


def demo_config(tmp_path: Path, epochs: int = 200) -> Path:
    """The digits demo with many epochs, so that a run is still going when the test acts on it."""
    text = (REPO / "examples" / "digits.toml").read_text().replace("epochs = 5", f"epochs = {epochs}")
    path = tmp_path / "long_digits.toml"
    path.write_text(text)
    return path

