"""Kill time: from the console's kill (`runs.kill`, in-process, as the `k` key and `trainconsole kill` call
it) to its return, on a training run of the digits demo that is mid-epoch, with one checkout's code.

Each measurement launches the run in a scratch home, waits for its first `step` event, then kills it and
checks that no process of it is left. `--pair BASE` runs this file alternately with BASE's code and this
checkout's (PYTHONPATH, so the run processes import the same code) and prints both and their ratio:

    .venv/bin/python benchmarks/kill_time.py --repeat 5 --pair /tmp/base
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def runs_module() -> object:
    """The lifecycle module of whichever checkout is first on the path (it moved in issue 45)."""
    try:
        from trainconsole.control import runs
    except ImportError:
        from trainconsole.console.control import runs  # type: ignore[no-redef]
    return runs


def one_kill() -> float:
    """Seconds from the kill's call to its return, on a run that has started to train."""
    from trainconsole import protocol

    runs = runs_module()
    config = protocol.load(HERE / "examples" / "digits.toml")
    config["train"]["epochs"] = 10_000
    run = runs.launch(config, root=protocol.home())  # type: ignore[attr-defined]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not any(e.get("type") == "step" for e in protocol.tail(run.events)):
        time.sleep(0.05)
    t0 = time.perf_counter()
    survivors = runs.kill(run)  # type: ignore[attr-defined]
    took = time.perf_counter() - t0
    if survivors or protocol.run_status(run) != "killed":
        raise SystemExit(f"the kill left {survivors} ({protocol.run_status(run)})")
    return took


def measure(repeat: int) -> list[float]:
    """`repeat` kills, each in a scratch home."""
    out = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as home:
            os.environ["TRAINCONSOLE_HOME"] = home
            out.append(one_kill())
    return out


def pair(base: Path, repeat: int) -> None:
    """Alternate BASE's code and this checkout's, one kill at a time; print medians and the ratio."""
    times: dict[str, list[float]] = {"base": [], "new": []}
    for _ in range(repeat):
        for name, repo in (("base", base), ("new", HERE)):
            env = {**os.environ, "PYTHONPATH": str(repo)}
            done = subprocess.run([sys.executable, __file__, "--repeat", "1"], env=env, cwd=repo,
                                  capture_output=True, text=True, check=True)
            times[name] += json.loads(done.stdout.strip().splitlines()[-1])
    base_s, new_s = statistics.median(times["base"]), statistics.median(times["new"])
    print(json.dumps({k: [round(t, 3) for t in v] for k, v in times.items()}))
    print(f"kill time, median of {repeat}: base {base_s:.3f} s, new {new_s:.3f} s, "
          f"new/base {new_s / base_s:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--pair", type=Path, help="another checkout to alternate with this one")
    args = parser.parse_args()
    if args.pair:
        pair(args.pair, args.repeat)
    else:
        print(json.dumps(measure(args.repeat)))


if __name__ == "__main__":
    main()
