"""A script's own throughput under `trainconsole run --script` over the same script run bare.

The script (benchmarks/script_train.py) measures itself and prints its samples/s; bare, its output goes
to a file as with `nohup`; under trainconsole it goes through the runner's pipes into stdout.log and the
metric parser. The two alternate, --reps times each, and the ratio of medians is printed.

    .venv/bin/python benchmarks/script_overhead.py [--reps 5] [--threads 2] [--print-every 10] [--device cpu]
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
SCRIPT = str(ROOT / "benchmarks" / "script_train.py")


def last_rate(text: str) -> float:
    """The samples/s in the script's last JSON line."""
    return json.loads(text.strip().splitlines()[-1])["samples_per_s"]


def bare(script_args: list[str], workdir: Path) -> float:
    """Run the script as a user would, output to a file."""
    log = workdir / "bare.log"
    with log.open("w") as out:
        subprocess.run([sys.executable, SCRIPT, *script_args], stdout=out, stderr=subprocess.STDOUT,
                       check=True, cwd=workdir)
    return last_rate(log.read_text())


def under_console(script_args: list[str], home: str) -> tuple[float, dict]:
    """Run it with `trainconsole run --script --wait`; its samples/s and the `finished` event (step count,
    the runner's and the script's CPU seconds)."""
    env = {**os.environ, "TRAINCONSOLE_HOME": home}
    out = subprocess.run([EXE, "run", "--script", SCRIPT, "--wait", "--", *script_args], capture_output=True,
                         text=True, env=env, check=True, cwd=ROOT)
    run = Path(home) / "runs" / out.stdout.split()[0]
    events = [json.loads(line) for line in (run / "events.jsonl").open()]
    finished = next(e for e in events if e["type"] == "finished")
    finished["step_events"] = sum(1 for e in events if e["type"] == "step")
    return last_rate((run / "stdout.log").read_text()), finished


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--print-every", type=int, default=10)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    script_args = ["--steps", str(args.steps), "--threads", str(args.threads), "--device", args.device,
                   "--print-every", str(args.print_every)]
    b, c, cpu = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.reps):
            b.append(bare(script_args, Path(tmp)))
            rate, finished = under_console(script_args, tmp)
            c.append(rate)
            cpu.append((finished["runner_cpu_s"], finished["script_cpu_s"]))
    ratio = statistics.median(c) / statistics.median(b)
    share = statistics.median(r / s for r, s in cpu)
    print(f"script ({args.device}, print every {args.print_every} steps, {finished['step_events']} step "
          f"events): bare {statistics.median(b):.0f} samples/s {[round(x) for x in b]}, trainconsole "
          f"{statistics.median(c):.0f} samples/s {[round(x) for x in c]}, ratio {ratio:.3f}; runner CPU / "
          f"script CPU {share:.4f} {[f'{r:.2f}/{s:.1f}' for r, s in cpu]}", flush=True)


if __name__ == "__main__":
    main()
