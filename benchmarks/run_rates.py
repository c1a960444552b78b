"""Shared by the strategy benchmarks: a run's samples/s from its own step events, the bare DDP baseline's,
and the alternation of cases (each case once per repetition, so drift hits all of them alike)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXE = str(Path(sys.executable).parent / "trainconsole")


def bare_ddp(args: list[str]) -> float:
    """Samples/s of benchmarks/bare_ddp.py with these arguments (it prints one JSON line)."""
    cmd = [sys.executable, str(ROOT / "benchmarks" / "bare_ddp.py"), *args]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])["samples_per_s"]


def run_rate(overrides: list[str], home: str, warmup: int, samples_per_step: int) -> float:
    """Samples/s of `trainconsole run examples/digits.toml --set ... --wait`, from its `step` events after
    `warmup` steps; the run must not have recovered from an out-of-memory (that would be another cost)."""
    sets = [a for o in overrides for a in ("--set", o)]
    out = subprocess.run([EXE, "run", "examples/digits.toml", *sets, "--wait"], capture_output=True,
                         text=True, cwd=ROOT, env={**os.environ, "TRAINCONSOLE_HOME": home})
    assert out.returncode == 0 and out.stdout.strip(), out.stdout + out.stderr
    run_id = out.stdout.split()[0]
    events = [json.loads(line) for line in (Path(home) / "runs" / run_id / "events.jsonl").open()]
    assert not any(e["type"] == "oom_recovered" for e in events)
    steps = [e for e in events if e["type"] == "step" and e["step"] > warmup]
    first, last = steps[0], steps[-1]
    return (last["step"] - first["step"]) * samples_per_step / (last["t"] - first["t"])


def alternate(cases: dict[str, Callable[[], float]], reps: int) -> dict[str, float]:
    """Run every case once per repetition, print each repetition and the medians; return the medians."""
    rates: dict[str, list[float]] = {name: [] for name in cases}
    for rep in range(reps):
        for name, case in cases.items():
            rates[name].append(case())
        load = os.getloadavg()[0]  # other work on the machine skews 2-thread runs most: say how busy
        print(f"rep {rep + 1}: " + ", ".join(f"{k} {v[-1]:.1f}" for k, v in rates.items())
              + f" (load {load:.1f})", flush=True)
    medians = {name: statistics.median(values) for name, values in rates.items()}
    for name, values in rates.items():
        print(f"{name}: median {medians[name]:.1f} samples/s {[round(v, 1) for v in values]}")
    return medians


def measure(doc: str, bare_args: list[str], cases: dict[str, list[str]], warmup: int,
            samples_per_step: int) -> dict[str, float]:
    """A benchmark's command line (`--reps`), then bare DDP and each case's run alternated: the medians."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    reps = parser.parse_args().reps
    with tempfile.TemporaryDirectory() as home:
        runs = {"bare": lambda: bare_ddp(bare_args),
                **{name: (lambda o=overrides: run_rate(o, home, warmup, samples_per_step))
                   for name, overrides in cases.items()}}
        return alternate(runs, reps)
