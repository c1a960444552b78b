"""Two identical runs, started together, show samples/s within 25 % of each other (issue 25).

Each round starts the same digits config twice at once (same seed, same load), waits for both to finish
and compares what `trainconsole ls --json` shows (the run's mean over its training), with what the last
step event alone says (one moment's rate: the figure shown before issue 25).

    .venv/bin/python benchmarks/identical_runs.py [--rounds 3] [--epochs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from console_common import machine

ROOT = Path(__file__).resolve().parent.parent
EXE = str(Path(sys.executable).parent / "trainconsole")


def cli(home: str, *args: str) -> str:
    env = {**os.environ, "TRAINCONSOLE_HOME": home}
    return subprocess.run([EXE, *args], cwd=ROOT, env=env, capture_output=True, text=True, check=True).stdout


def last_step(home: str, run_id: str) -> dict:
    lines = (Path(home) / "runs" / run_id / "events.jsonl").read_text().splitlines()
    return next(e for e in map(json.loads, reversed(lines)) if e["type"] == "step")


def one_round(epochs: int) -> tuple[float, float]:
    """(ratio of the two runs' ls figures, ratio of their last step events' figures), larger over smaller."""
    with tempfile.TemporaryDirectory() as home:
        ids = [cli(home, "run", "examples/digits.toml", "--set", f"train.epochs={epochs}").strip()
               for _ in range(2)]
        while True:
            rows = {r["id"]: r for r in json.loads(cli(home, "ls", "--json"))}
            if all(rows[i]["status"] in ("finished", "failed") for i in ids):
                break
            time.sleep(0.5)
        shown = [rows[i]["last"]["samples_per_s"] for i in ids]
        moment = [last_step(home, i)["samples_per_s"] for i in ids]
    return max(shown) / min(shown), max(moment) / min(moment)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    rounds = [one_round(args.epochs) for _ in range(args.rounds)]
    print(json.dumps({"benchmark": "two identical runs together", "epochs": args.epochs,
                      "ls_ratios": [round(r[0], 3) for r in rounds],
                      "last_moment_ratios": [round(r[1], 3) for r in rounds], "machine": machine()}))


if __name__ == "__main__":
    main()
