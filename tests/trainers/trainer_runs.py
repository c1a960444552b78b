"""Helpers for real trainer runs: configs, run directories, trainer subprocesses, events."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import torch

from trainconsole.protocol import RunDir, defaults, dumps, new_run_id, read_all

REPO = Path(__file__).resolve().parents[2]
#: What `accelerator = 'auto'` picks here: the expectations of device, backend and precision follow it,
#: so the suite runs on a CPU box and a CUDA box alike. Tests of CPU-only paths (gloo DDP with 2 workers,
#: 3 model-parallel stages) set `accelerator = 'cpu'`; GPU-only tests are marked `gpu`.
CUDA = torch.cuda.is_available()
GPUS = torch.cuda.device_count() if CUDA else 0
ON_CPU = {"accelerator": "cpu"}


def auto_devices() -> list[str]:
    """`started.devices` of a single-device run with `accelerator = 'auto'`."""
    return ["cuda:0"] if CUDA else ["cpu"]


def make_config(**sections: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Defaults with some keys overridden, e.g. make_config(train={"epochs": 2})."""
    config = defaults()
    for section, values in sections.items():
        config[section].update(values)
    return config


def make_run(root: Path, config: dict[str, dict[str, Any]], name: str = "test") -> RunDir:
    """A run directory as the console creates it: config.toml and run.json."""
    run = RunDir.create(root, new_run_id(name))
    run.config.write_text(dumps(config))
    run.info_path.write_text(json.dumps({"id": run.id, "name": name, "kind": "train"}))
    return run


def start(run: RunDir, *args: str, pythonpath: str = "") -> subprocess.Popen[bytes]:
    """Start `python -m trainconsole.trainers RUN_DIR ...` as a real subprocess, stdio to the run's log
    files."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pythonpath, str(REPO), env.get("PYTHONPATH", "")) if p)
    with open(run.stdout, "ab") as out, open(run.stderr, "ab") as err:
        return subprocess.Popen([sys.executable, "-m", "trainconsole.trainers", str(run.path), *args],
                                stdout=out, stderr=err, cwd=REPO, env=env)


def train(run: RunDir, *args: str, timeout: float = 120, pythonpath: str = "") -> int:
    """Run the trainer to the end and return its exit code."""
    proc = start(run, *args, pythonpath=pythonpath)
    try:
        return proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()


def events(run: RunDir, kind: str | None = None) -> list[dict[str, Any]]:
    """The run's events (of one kind, if given)."""
    return [e for e in read_all(run.events) if kind is None or e["type"] == kind]
