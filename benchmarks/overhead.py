"""Overhead of running under trainconsole: samples/s of `trainconsole run` over a bare PyTorch loop.

Both train the same model on the same in-memory data and batch size with SGD; they run alternately, each
at least 3 times, and steady-state throughput (after warm-up steps) is compared as a ratio of medians.

    .venv/bin/python benchmarks/overhead.py [--reps 3] [--only small_cnn|resnet18]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXE = str(Path(sys.executable).parent / "trainconsole")

CASES = {
    # name: (config file, overrides, bare-loop args)
    "small_cnn": ("examples/digits.toml",
                  ["data.name=\"synthetic\"", "data.shape=[3,32,32]", "data.samples=32768",
                   "train.batch_size=128", "train.epochs=1", "train.max_steps=200"],
                  ["--model", "small_cnn", "--shape", "3,32,32", "--samples", "32768", "--batch-size", "128",
                   "--steps", "180"]),
    "resnet18": ("examples/synthetic_resnet18.toml",
                 ["train.max_steps=120", "data.samples=8192"],
                 ["--model", "resnet18", "--shape", "3,32,32", "--samples", "8192", "--batch-size", "64",
                  "--steps", "100"]),
}
WARMUP_STEPS = 20


def bare(args: list[str], threads: int) -> float:
    """Samples/s of the bare loop (it prints one JSON line)."""
    cmd = [sys.executable, str(ROOT / "benchmarks" / "bare_loop.py"), *args,
           "--threads", str(threads), "--warmup", str(WARMUP_STEPS)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])["samples_per_s"]


def under_console(config: str, overrides: list[str], threads: int, home: str) -> float:
    """Samples/s of `trainconsole run --wait`, from the run's own step events after warm-up."""
    sets = [a for o in [*overrides, f"train.threads={threads}"] for a in ("--set", o)]
    out = subprocess.run([EXE, "run", config, *sets, "--wait"], capture_output=True, text=True,
                         cwd=ROOT, env={**os.environ, "TRAINCONSOLE_HOME": home}, check=True)
    run_id = out.stdout.split()[0]
    events = [json.loads(line) for line in (Path(home) / "runs" / run_id / "events.jsonl").open()]
    steps = [e for e in events if e["type"] == "step" and e["step"] > WARMUP_STEPS]
    first, last = steps[0], steps[-1]
    batch = next(e for e in events if e["type"] == "started").get("batch_size") or _batch(overrides, config)
    return (last["step"] - first["step"]) * batch / (last["t"] - first["t"])


def _batch(overrides: list[str], config: str) -> int:
    import tomllib

    for o in overrides:
        if o.startswith("train.batch_size="):
            return int(o.split("=")[1])
    return tomllib.loads((ROOT / config).read_text())["train"]["batch_size"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--only", choices=list(CASES))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        for name, (config, overrides, bare_args) in CASES.items():
            if args.only and name != args.only:
                continue
            b, c = [], []
            for _ in range(args.reps):
                b.append(bare(bare_args, args.threads))
                c.append(under_console(config, overrides, args.threads, home))
            ratio = statistics.median(c) / statistics.median(b)
            print(f"{name}: bare {statistics.median(b):.0f} samples/s {[round(x) for x in b]}, "
                  f"trainconsole {statistics.median(c):.0f} samples/s {[round(x) for x in c]}, "
                  f"ratio {ratio:.3f}", flush=True)


if __name__ == "__main__":
    main()
