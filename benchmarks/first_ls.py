"""The first `ls --json` of a big home (no run index yet: every run summarized), the warm one and
`ls --filter`, for this tree's code and a baseline's (another checkout, `--base`), alternated in one run
so that each ratio is taken under one load.

The home is `many_runs.py`'s: one real digits run (`--source`, else trained now) copied N times with hard
links and a run.json of its own, one run in 100 with a log grown to 3 MB. A run of this version leaves
the summary of its log beside it (`summary.json`), and so does each copy (the grown log's is written
for it); a `--source` run from before has none, as a home of older runs. Each cold listing starts with
the index files removed. Prints one JSON line per size: medians of wall and CPU seconds (user + system,
a pool's processes included), and their ratios new / base.

    git worktree add /tmp/base 1e2f588
    .venv/bin/python benchmarks/first_ls.py --base /tmp/base --sizes 10000 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from console_common import REPO, machine
from many_runs import LINKS, NEWEST, add_copy, big_copy, index_settle_s, real_run

from trainconsole.protocol import RunDir, index, run_summary

FILTER = "val_acc>0.5 lr<0.1"


def timed(tree: Path, home: Path, runs: int, *args: str) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, its pool's processes included) of one `trainconsole ls
    --json [ARGS]` run from `tree`'s code (every run listed unless a filter is given)."""
    env = {**os.environ, "TRAINCONSOLE_HOME": str(home), "PYTHONPATH": str(tree)}
    code = "import sys; from trainconsole.console.cli import main; sys.argv[0] = 'trainconsole'; main()"
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", code, "ls", "--json", *args], env=env, cwd="/",
                                stdout=out)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        out.seek(0)
        listed = len(json.loads(out.read()))
    assert os.waitstatus_to_exitcode(status) == 0 and (listed == runs or args), (listed, runs)
    return seconds, usage.ru_utime + usage.ru_stime


def cold(tree: Path, home: Path, runs: int) -> tuple[float, float]:
    """The first listing: the index removed first."""
    for name in ("index.tsv", "index-details.tsv"):
        (home / name).unlink(missing_ok=True)
    return timed(tree, home, runs)


def measure(trees: dict[str, Path], home: Path, runs: int, repeat: int) -> dict[str, object]:
    """Medians of `repeat` cold, warm and filtered listings per tree, the trees alternating."""
    times: dict[str, list[tuple[float, float]]] = {}
    for _ in range(repeat):
        for name, tree in trees.items():
            times.setdefault(f"{name}_cold", []).append(cold(tree, home, runs))
            times.setdefault(f"{name}_warm", []).append(timed(tree, home, runs))
            times.setdefault(f"{name}_filter", []).append(timed(tree, home, runs, "--filter", FILTER))
    row: dict[str, object] = {"runs": runs}
    for name, values in times.items():
        row[f"{name}_s"] = round(statistics.median(v[0] for v in values), 3)
        row[f"{name}_cpu_s"] = round(statistics.median(v[1] for v in values), 3)
    if "base" in trees:
        for what in ("cold", "warm", "filter"):
            for unit in ("s", "cpu_s"):
                row[f"{what}_{unit}_ratio_new_to_base"] = round(row[f"new_{what}_{unit}"]
                                                                / row[f"base_{what}_{unit}"], 3)
    row["runs_s"] = {name: [round(v[0], 2) for v in values] for name, values in times.items()}
    return row


def main() -> None:
    """Grow a home to each size and print one JSON line per size."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--base", default="", help="a checkout of the baseline's code")
    parser.add_argument("--source", default="", help="copy this finished run instead of training one")
    args = parser.parse_args()
    trees = {"new": REPO} | ({"base": Path(args.base)} if args.base else {})
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        real = Path(args.source) if args.source else real_run(Path(tmp) / "template", 3)
        big = big_copy(real, Path(tmp) / "big", 3.0)
        if (real / run_summary.NAME).exists():  # a run of this version leaves its log's summary
            index.keep_log_summary(RunDir(big))
        home, have = Path(tmp) / "home", 1
        (home / "runs").mkdir(parents=True)
        add_copy(home, real, 0, NEWEST, day="29990101")
        for size in (int(s) for s in args.sizes.split(",")):
            for i in range(have, size):
                # a file takes at most 65,000 links (ext4): a fresh copy of the run per LINKS copies
                source = real if i < LINKS else Path(tmp) / f"real-{i // LINKS}"
                if not source.exists():
                    shutil.copytree(real, source)
                add_copy(home, big if i % 100 == 0 else source, i, "small-cnn-digits")
            have = size
            time.sleep(index_settle_s())
            print(json.dumps(measure(trees, home, size, args.repeat)), flush=True)
        print(json.dumps({"load": os.getloadavg(), "machine": machine()}))


if __name__ == "__main__":
    main()
