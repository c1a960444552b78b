"""The probe's cost: a script's steps/s under `trainconsole run --script` with the probe (the default)
over the same with `--no-measure`, on a CPU script of small steps (benchmarks/probe_steps.py). The two
alternate, --reps times each; the ratio of medians and the cost per step are printed.

    .venv/bin/python benchmarks/probe_overhead.py [--reps 7] [--steps 4000] [--runner]

`--runner` starts the script runner itself (`python -m trainconsole.trainers.scripts RUN_DIR`, what the CLI
starts detached) with this python: the same run, on a machine whose python has torch but not the console's
packages (a GPU box's own python3).
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
SCRIPT = str(ROOT / "benchmarks" / "probe_steps.py")


def rate(home: str, steps: int, measure: bool, runner: bool = False) -> tuple[float, int]:
    """One run's steps/s (the script's own figure) and how many probe step events it got."""
    if runner:
        run = runner_run(home, steps, measure)
    else:
        flags = [] if measure else ["--no-measure"]
        out = subprocess.run([EXE, "run", "--script", SCRIPT, *flags, "--wait", "--", "--steps", str(steps)],
                             capture_output=True, text=True, check=True, cwd=ROOT,
                             env={**os.environ, "TRAINCONSOLE_HOME": home})
        run = Path(home) / "runs" / out.stdout.split()[0]
    last = (run / "stdout.log").read_text().strip().splitlines()[-1]
    events = [json.loads(line) for line in (run / "events.jsonl").open()]
    return json.loads(last)["steps_per_s"], sum(e.get("source") == "probe" for e in events)


def runner_run(home: str, steps: int, measure: bool) -> Path:
    """The same run as `run --script ... --wait`, started as the script runner in the foreground."""
    sys.path.insert(0, str(ROOT))
    from trainconsole.protocol import RunDir, defaults, dumps, new_run_id

    config = defaults()
    config["script"].update(path=SCRIPT, args=["--steps", str(steps)], measure=measure, python=sys.executable)
    (Path(home) / "runs").mkdir(exist_ok=True)
    run = RunDir.create(Path(home), new_run_id("probe_steps"))
    run.config.write_text(dumps(config))
    run.info_path.write_text(json.dumps({"id": run.id, "name": "probe_steps", "kind": "script"}))
    with open(run.stdout, "ab") as out, open(run.stderr, "ab") as err:  # as a launch redirects them
        subprocess.run([sys.executable, "-m", "trainconsole.trainers.scripts", str(run.path)], check=True,
                       cwd=ROOT, env={**os.environ, "TRAINCONSOLE_HOME": home}, stdout=out, stderr=err)
    return run.path


def main() -> None:
    """Alternate probe and no probe; print both medians, the ratio and the cost per step."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--steps", type=int, default=4000)
    parser.add_argument("--runner", action="store_true", help="start the script runner, not the CLI")
    args = parser.parse_args()
    on: list[float] = []
    off: list[float] = []
    with tempfile.TemporaryDirectory() as home:
        for _ in range(args.reps):
            off.append(rate(home, args.steps, False, args.runner)[0])
            steps_per_s, probe_events = rate(home, args.steps, True, args.runner)
            on.append(steps_per_s)
            print(f"no probe {off[-1]:.0f}, probe {on[-1]:.0f} steps/s", flush=True)
    a, b = statistics.median(on), statistics.median(off)
    pairs = statistics.median(x / y for x, y in zip(on, off, strict=True))
    print(f"probe {a:.0f} steps/s {[round(r) for r in on]}, no probe {b:.0f} steps/s "
          f"{[round(r) for r in off]}, ratio {a / b:.3f} (pairwise median {pairs:.3f}), "
          f"{1e6 * (1 / a - 1 / b):+.1f} us/step "
          f"({probe_events} probe step events in the last run)")


if __name__ == "__main__":
    main()
